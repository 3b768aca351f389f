"""What drf-spectacular needs to describe the API beyond what it reads from the views."""

from __future__ import annotations

from drf_spectacular.extensions import OpenApiAuthenticationExtension

CATALOGUE_PREFIX = "/api/v1/"
# The runner-host API (submissions.api.runner_host_v1): documented here for whoever writes a runner.
RUNNER_PREFIX = "/api/runner/v1/"


class ApiTokenScheme(OpenApiAuthenticationExtension):
    target_class = "accounts.authentication.ApiTokenAuthentication"
    name = "apiToken"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer",
                "description": "an API token from /accounts/tokens/ (bp_…), sent as `Authorization: Bearer bp_…`; "
                               "tokens are made and revoked on that page, not through the API"}


def api_v1_only(endpoints, **kwargs):
    """The schema describes everything under /api/v1/ (the public catalogue, and the token-only submission and
    run-request APIs the CLI uses: docs/service.md, docs/runner-hosts.md, so uploaders have a contract too)
    and the runner-host API under /api/runner/v1/."""
    return [(path, regex, method, view) for path, regex, method, view in endpoints
            if path.startswith((CATALOGUE_PREFIX, RUNNER_PREFIX))]


ERROR_SCHEMA = {
    "type": "object",
    "description": "The one error shape of every answer under /api/ (registry_site/catalogue/api/errors.py).",
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
    for path, operations in result.get("paths", {}).items():
        for method, operation in operations.items():
            responses = operation.setdefault("responses", {})
            extra = dict(TOKEN_ERROR_RESPONSES) if path.startswith(TOKEN_ONLY_PREFIXES) else {}
            if method in ("post", "put", "patch"):
                extra["413"] = "the request body is over the size limit"
            for status, description in {**ERROR_RESPONSES, **extra}.items():
                responses.setdefault(status, {"description": description, "content": reference})
    return result


# Answered only to a signed-in caller (a token); the catalogue is public.
TOKEN_ONLY_PREFIXES = ("/api/v1/submissions/", "/api/v1/run-requests/", "/api/v1/runner-hosts/", RUNNER_PREFIX)
TOKEN_ERROR_RESPONSES = {
    "401": "no valid API token was sent",
    "403": "the token's user may not do this (e.g. an unverified email address)",
}


_DATABASE_BOUNDS = {2**31 - 1, 2**63 - 1, -(2**31), -(2**63)}


def database_neutral_integers(result, generator, request, public):
    """drf-spectacular takes integer bounds from the connected database (int32 on PostgreSQL, int64 on
    SQLite); the API is the same on both, so the schema leaves the database's own limits out."""

    def walk(node):
        if isinstance(node, dict):
            kind = node.get("type")
            if kind == "integer" or (isinstance(kind, list) and "integer" in kind):  # 3.1: ["integer", "null"]
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


# Every character str.isspace() accepts (what .strip() removes), as a regex class body.
_PY_WHITESPACE = r"\t\n\x0b\x0c\r\x1c-\x1f \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"


def parameter_bounds(result, generator, request, public):
    """page/page_size/limit/run are whole numbers of at least 1 (page_size at most 500); a required
    string parameter is not empty (the view refuses `?workload=` as missing)."""
    from registry_site.catalogue.api.pagination import MAX_PAGE_SIZE
    from registry_site.catalogue.api.timelines import MAX_POINTS

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
                    # StrictQueryMixin refuses NUL in any value; a required one must hold more than the
                    # whitespace the views strip (Python's str.strip(), spelled out for ECMA regexes).
                    if parameter.get("required"):
                        schema.setdefault("minLength", 1)
                        schema.setdefault("pattern", rf"^[^\x00]*[^\x00{_PY_WHITESPACE}][^\x00]*$")
                    else:
                        schema.setdefault("pattern", r"^[^\x00]*$")
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


# Registers the OpenApiViewExtensions describing the token-only APIs (imported for that side effect).
from registry_site.catalogue.api import private_schema as _private_schema  # noqa: E402,F401


PUBLIC_TAG = "public catalogue"
# The order /api-docs/ groups operations in: what anyone may read first, then what a token does.
TAG_ORDER = (
    (PUBLIC_TAG, "Read approved results without an account: leaderboards, the answer, runs, systems, timelines."),
    ("submissions", "Upload a bundle and follow it through validation (an API token)."),
    ("run requests", "Ask a registered runner host to run a pack (an API token)."),
    ("runner hosts", "For runner-host software only: claim, report and finish queued runs (a host token)."),
)


def public_first(result, generator, request, public):
    """Issue 32 item 8: /api-docs/ listed the runner-host endpoints first and the public ones without a
    summary. The public catalogue gets its own tag, listed first, and every operation a one-line summary
    (the first sentence of its description where the view gave none)."""
    paths = result.get("paths", {})
    for operations in paths.values():
        for operation in operations.values():
            if not isinstance(operation, dict):
                continue
            if operation.get("tags") == ["v1"]:
                operation["tags"] = [PUBLIC_TAG]
            if not operation.get("summary"):
                text = " ".join((operation.get("description") or "").split())
                sentence = text.split(". ")[0].rstrip(".")
                operation["summary"] = (sentence[:117] + "…") if len(sentence) > 118 else sentence or \
                    operation.get("operationId", "").replace("_", " ")
    rank = {name: i for i, (name, _) in enumerate(TAG_ORDER)}

    def order(item):
        path, operations = item
        tags = [t for op in operations.values() if isinstance(op, dict) for t in op.get("tags") or []]
        return (min((rank.get(t, len(rank)) for t in tags), default=len(rank)), path)

    result["paths"] = dict(sorted(paths.items(), key=order))
    result["tags"] = [{"name": name, "description": words} for name, words in TAG_ORDER]
    return result
