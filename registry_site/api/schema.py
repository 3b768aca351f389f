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
