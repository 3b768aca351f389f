"""What drf-spectacular needs to describe the API beyond what it reads from the views."""

from __future__ import annotations

from drf_spectacular.extensions import OpenApiAuthenticationExtension

CATALOGUE_PREFIX = "/api/v1/"
# The runner-host API (submissions.api.runner_host_v1): documented here for whoever writes a runner.
RUNNER_PREFIX = "/api/runner/v1/"
# Documented elsewhere (docs/service.md, docs/runner-hosts.md): token-only APIs for the CLI and operators.
PRIVATE_PREFIXES = ("/api/v1/submissions/", "/api/v1/run-requests/", "/api/v1/runner-hosts/")


class ApiTokenScheme(OpenApiAuthenticationExtension):
    target_class = "accounts.authentication.ApiTokenAuthentication"
    name = "apiToken"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer", "description": "an API token from /accounts/tokens/ (bp_…)"}


def public_catalogue_only(endpoints, **kwargs):
    """The schema describes the public, read-only catalogue and the runner-host API; the private upload and
    queue APIs stay out of it."""
    return [(path, regex, method, view) for path, regex, method, view in endpoints
            if (path.startswith(CATALOGUE_PREFIX) and not path.startswith(PRIVATE_PREFIXES))
            or path.startswith(RUNNER_PREFIX)]


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
