"""The OpenAPI schema (JSON, at /api/v1/schema/) and a Swagger UI page for it.

The page lives at /api-docs/, outside /api/, so that everything under /api/
stays JSON. It satisfies the site's CSP (script-src/style-src 'self', no
inline code) without loosening it:

- drf-spectacular-sidecar serves Swagger UI's files from our static files
  (SPECTACULAR_SETTINGS "SWAGGER_UI_DIST": "SIDECAR"), never a CDN;
- the split view loads its initialisation code as a separate script
  (`/api-docs/?script`), not inline;
- our template drops the stock page's inline <style> block (three cosmetic
  rules); nothing else of the stock template changes.

Redoc is not offered: it injects <style> elements at run time, which a
style-src without 'unsafe-inline' refuses.
"""

from __future__ import annotations

from drf_spectacular.views import SpectacularJSONAPIView, SpectacularSwaggerSplitView

from registry_site.catalogue.api import schema  # noqa: F401  registers the token scheme with drf-spectacular


class SchemaView(SpectacularJSONAPIView):
    throttle_classes = []  # generated once per process and cached by drf-spectacular; tools fetch it often


class DocsView(SpectacularSwaggerSplitView):
    template_name = "api/swagger_ui.html"
    url_name = "api_schema"
    title = "Benchpack registry API"
