from django.contrib import admin
from django.urls import include, path

from accounts import views as account_views
from registry_site import health
from registry_site import views
from registry_site.api import v1 as runs_api
from submissions.api import v1 as submissions_api

urlpatterns = [
    path("healthz/", health.healthz, name="healthz"),
    path("", views.home, name="home"),
    path("", include("registry_site.pages.urls")),
    path("accounts/tokens/", account_views.tokens, name="accounts_tokens"),
    path("accounts/tokens/<int:pk>/revoke/", account_views.revoke_token, name="accounts_revoke_token"),
    path("accounts/", include("allauth.urls")),
    path("", include("submissions.urls")),
    path("", include("submissions.runqueue.urls")),
    path("api/v1/submissions/", submissions_api.SubmissionList.as_view(), name="api_submissions"),
    path("api/v1/submissions/<uuid:pk>/", submissions_api.SubmissionDetail.as_view(), name="api_submission"),
    path("api/v1/runs/", runs_api.RunList.as_view(), name="api_runs"),
    path("api/v1/runs/<int:pk>/", runs_api.RunDetail.as_view(), name="api_run"),
    path("admin/", admin.site.urls),
]
