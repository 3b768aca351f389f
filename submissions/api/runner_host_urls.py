"""`/api/runner/v1/`: the runner-host API (submissions.api.runner_host_v1), beside the public API."""

from django.urls import path

from submissions.api import runner_host_v1 as api

urlpatterns = [
    path("heartbeat/", api.HostHeartbeat.as_view(), name="api_runner_heartbeat"),
    path("stopping/", api.HostStopping.as_view(), name="api_runner_stopping"),
    path("runs/<uuid:pk>/claim/", api.RunClaim.as_view(), name="api_runner_claim"),
    path("runs/<uuid:pk>/heartbeat/", api.RunHeartbeat.as_view(), name="api_runner_run_heartbeat"),
    path("runs/<uuid:pk>/progress/", api.RunProgress.as_view(), name="api_runner_progress"),
    path("runs/<uuid:pk>/hardware/", api.RunHardware.as_view(), name="api_runner_hardware"),
    path("runs/<uuid:pk>/end/", api.RunEnd.as_view(), name="api_runner_end"),
    path("runs/<uuid:pk>/finish/", api.RunFinish.as_view(), name="api_runner_finish"),
]
