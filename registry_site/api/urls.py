"""The public catalogue API under /api/v1/ (the submissions and run-queue APIs keep their own modules)."""

from django.urls import path

from registry_site.api import runs
from registry_site.api.docs import SchemaView

urlpatterns = [
    path("runs/", runs.RunList.as_view(), name="api_runs"),
    path("runs/<str:pk>/", runs.RunDetail.as_view(), name="api_run"),
    path("schema/", SchemaView.as_view(), name="api_schema"),
]
