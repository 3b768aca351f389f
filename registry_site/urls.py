from django.contrib import admin
from django.urls import include, path, re_path

from accounts import views as account_views
from registry_site import health
from registry_site.catalogue import views
from registry_site.catalogue.api import errors as api_errors
from registry_site.catalogue.api.docs import DocsView

urlpatterns = [
    path("healthz/", health.healthz, name="healthz"),
    path("", views.home, name="home"),
    path("favicon.ico", views.favicon, name="favicon"),
    path("", include("registry_site.catalogue.pages.urls")),
    path("accounts/tokens/", account_views.tokens, name="accounts_tokens"),
    path("accounts/tokens/<int:pk>/revoke/", account_views.revoke_token, name="accounts_revoke_token"),
    path("accounts/", include("allauth.urls")),
    path("", include("submissions.urls")),
    path("", include("submissions.runqueue.urls")),
    path("api/v1/", include("registry_site.api_v1")),  # the whole public API, one table
    path("api/runner/v1/", include("submissions.api.runner_host_urls")),  # runner hosts only (host token)
    path("api-docs/", DocsView.as_view(), name="api_docs"),
    path("admin/", admin.site.urls),
    re_path(r"^api/", api_errors.api_not_found),  # last: any other /api/ path is a JSON 404, DEBUG or not
]

# Errors Django answers itself: JSON under /api/, the site's pages elsewhere (registry_site.catalogue.api.errors).
handler400 = api_errors.bad_request
handler403 = api_errors.permission_denied
handler404 = api_errors.not_found
handler500 = api_errors.server_error
