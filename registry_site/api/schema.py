"""What drf-spectacular needs to describe the API beyond what it reads from the views."""

from __future__ import annotations

from drf_spectacular.extensions import OpenApiAuthenticationExtension

CATALOGUE_PREFIX = "/api/v1/"
# Documented elsewhere (docs/service.md, docs/runner-hosts.md): token-only APIs for the CLI and operators.
PRIVATE_PREFIXES = ("/api/v1/submissions/", "/api/v1/run-requests/", "/api/v1/runner-hosts/")


class ApiTokenScheme(OpenApiAuthenticationExtension):
    target_class = "accounts.authentication.ApiTokenAuthentication"
    name = "apiToken"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer", "description": "an API token from /accounts/tokens/ (bp_…)"}


def public_catalogue_only(endpoints, **kwargs):
    """The schema describes the public, read-only catalogue; the private upload and queue APIs stay out of it."""
    return [(path, regex, method, view) for path, regex, method, view in endpoints
            if path.startswith(CATALOGUE_PREFIX) and not path.startswith(PRIVATE_PREFIXES)]


ERROR_SCHEMA = {
    "type": "object",
    "description": "The one error shape of every answer under /api/ (registry_site/api/errors.py).",
    "properties": {
        "error": {"type": "string", "description": "one sentence naming what is wrong"},
        "status": {"type": "integer", "description": "the HTTP status, repeated"},
        "code": {"type": "string", "description": "short machine-readable code: invalid, not_found, throttled, …"},
        "fields": {"type": "object", "additionalProperties": {"type": "array", "items": {"type": "string"}},
                   "description": "only when parameters are at fault: parameter -> reasons"},
    },
    "required": ["error", "status", "code"],
}
ERROR_RESPONSES = {
    "400": "a query parameter is unknown or its value is invalid; `fields` names it",
    "404": "no such public object, or a page past the last",
    "429": "too many requests from this address; see the Retry-After header",
}


def error_responses(result, generator, request, public):
    """Every operation can answer the shared error shape; say so once for all of them."""
    result.setdefault("components", {}).setdefault("schemas", {})["Error"] = ERROR_SCHEMA
    reference = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            responses = operation.setdefault("responses", {})
            for status, description in ERROR_RESPONSES.items():
                responses.setdefault(status, {"description": description, "content": reference})
    return result


_DATABASE_BOUNDS = {2**31 - 1, 2**63 - 1, -(2**31), -(2**63)}


def database_neutral_integers(result, generator, request, public):
    """drf-spectacular takes integer bounds from the connected database (int32 on PostgreSQL, int64 on
    SQLite); the API is the same on both, so the schema leaves the database's own limits out."""

    def walk(node):
        if isinstance(node, dict):
            if node.get("type") == "integer":
                for bound in ("maximum", "minimum"):
                    if node.get(bound) in _DATABASE_BOUNDS:
                        del node[bound]
                if node.get("format") == "int64":
                    del node["format"]
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(result)
    return result


# Parameters whose bounds the views enforce by hand (pagination.positive_int, timelines' limit): the
# schema states them, so a client (or Schemathesis) reading the schema never sends what is refused.
_POSITIVE_INTEGER_PARAMETERS = {"page": None, "page_size": 500, "limit": None, "run": 10**18}


def parameter_bounds(result, generator, request, public):
    """page/page_size/limit/run are whole numbers of at least 1 (page_size at most 500); a required
    string parameter is not empty (the view refuses `?workload=` as missing)."""
    from registry_site.api.pagination import MAX_PAGE_SIZE
    from registry_site.api.timelines import MAX_POINTS

    most = {**_POSITIVE_INTEGER_PARAMETERS, "page_size": MAX_PAGE_SIZE, "limit": MAX_POINTS}
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            for parameter in operation.get("parameters", []):
                schema = parameter.get("schema", {})
                if parameter.get("in") == "query" and parameter["name"] in most:
                    schema.update({"type": "integer", "minimum": 1})
                    schema.pop("format", None)
                    if most[parameter["name"]] is not None:
                        schema["maximum"] = most[parameter["name"]]
                elif schema.get("type") == "string" and "enum" not in schema and "format" not in schema:
                    # StrictQueryMixin refuses NUL in any value; a required one may not be empty.
                    schema.setdefault("pattern", "^[^\\x00]*$")
                    if parameter.get("required"):
                        schema.setdefault("minLength", 1)
                elif schema.get("type") == "array":
                    schema.setdefault("minItems", 1)  # `?order=` is no sort key, which the view refuses
    return result


def nullable_as_type_null(result, generator, request, public):
    """OpenAPI 3.1 has no `nullable`: DRF's pagination schema still writes it for next/previous, so
    it becomes the 3.1 spelling, a type list with "null" (a strict validator would ignore `nullable`
    and refuse the null of a last page)."""

    def walk(node):
        if isinstance(node, dict):
            if node.pop("nullable", False):
                kind = node.get("type")
                if isinstance(kind, str):
                    node["type"] = [kind, "null"]
                elif isinstance(kind, list) and "null" not in kind:
                    kind.append("null")
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(result)
    return result
