"""The OpenAPI schema says what the views answer.

Two checks, so neither side can drift alone:
- every endpoint's real response validates against the schema's response
  definition for that path (objects closed: a field the schema does not list
  fails, as does a missing or mistyped one);
- the generated schema equals the committed golden/openapi.json, so a view
  whose schema changes shows up in review (regenerate: golden.py).
"""

from __future__ import annotations

import json

import jsonschema
import pytest

from tests.service.api.endpoints import endpoint_requests
from tests.service.api.golden import assert_matches_golden

pytestmark = pytest.mark.django_db


def _as_json_schema(node, components):
    """OpenAPI 3.0 schema -> JSON Schema: resolve $ref, nullable -> null type, objects closed."""
    if isinstance(node, list):
        return [_as_json_schema(n, components) for n in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        resolved = _as_json_schema(components[node["$ref"].rsplit("/", 1)[1]], components)
        return {"anyOf": [resolved, {"type": "null"}]} if node.get("nullable") else resolved
    out = {k: _as_json_schema(v, components) for k, v in node.items() if k not in ("nullable", "readOnly",
                                                                                     "writeOnly", "format")}
    if node.get("nullable"):
        if "type" in out:
            out["type"] = [out["type"], "null"]
        else:
            out = {"anyOf": [out, {"type": "null"}]}
        if "enum" in out:
            out["enum"] = [*out["enum"], None]
    if node.get("type") == "object" and "properties" in node and "additionalProperties" not in node:
        out["additionalProperties"] = False
    if "allOf" in out and len(out["allOf"]) == 1:
        merged = out.pop("allOf")[0]
        out = {**merged, **out}
    return out


@pytest.fixture
def schema(client):
    response = client.get("/api/v1/schema/")
    assert response.status_code == 200
    return response.json()


def test_every_response_validates_against_the_schema(client, catalogue, schema):
    components = schema["components"]["schemas"]
    for name, url, path in endpoint_requests(catalogue):
        operation = schema["paths"][path]["get"]
        definition = operation["responses"]["200"]["content"]["application/json"]["schema"]
        body = client.get(url).json()
        try:
            jsonschema.validate(body, _as_json_schema(definition, components))
        except jsonschema.ValidationError as error:
            raise AssertionError(f"{name} ({url}) does not match the schema of {path}: {error.message} "
                                 f"at {list(error.absolute_path)}") from None


def test_the_validation_catches_a_stray_field(catalogue, schema, client):
    components = schema["components"]["schemas"]
    definition = schema["paths"]["/api/v1/runs/{id}/"]["get"]["responses"]["200"]["content"]["application/json"]
    body = client.get(f"/api/v1/runs/{catalogue['runs']['smoke'].pk}/").json()
    body["not_in_the_schema"] = 1
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(body, _as_json_schema(definition["schema"], components))


@pytest.mark.parametrize("url, status", [("/api/v1/runs/?pack=nope", 400), ("/api/v1/runs/?colour=red", 400),
                                         ("/api/v1/runs/abc/", 404), ("/api/v1/leaderboards/nope/", 404),
                                         ("/api/v1/compare/?runs=1", 400), ("/api/v1/timelines/", 400)])
def test_error_answers_match_the_schemas_error_shape(client, catalogue, schema, url, status):
    path = {"/api/v1/runs/abc/": "/api/v1/runs/{id}/", "/api/v1/leaderboards/nope/": "/api/v1/leaderboards/{pack_id}/"}.get(
        url, url.split("?")[0])
    response = client.get(url)
    assert response.status_code == status
    definition = schema["paths"][path]["get"]["responses"][str(status)]["content"]["application/json"]["schema"]
    jsonschema.validate(response.json(), _as_json_schema(definition, schema["components"]["schemas"]))


def test_the_schema_lists_exactly_the_parameters_each_view_accepts(client, catalogue, schema):
    from django.urls import resolve

    for name, url, path in endpoint_requests(catalogue):
        view = resolve(url.split("?")[0]).func.view_class()
        accepted = view.query_parameters()
        documented = {p["name"] for p in schema["paths"][path]["get"].get("parameters", []) if p["in"] == "query"}
        assert documented == accepted, (name, sorted(accepted ^ documented))


def test_the_schema_is_the_committed_one(schema):
    assert_matches_golden("openapi", json.loads(json.dumps(schema)))


def test_the_schema_generates_without_warnings(db):
    from django.core.management import call_command

    call_command("spectacular", "--validate", "--fail-on-warn", "--file", "/dev/null")
