"""/api/v1/: the whole versioned public API in one URL configuration.

Each app keeps its views (the catalogue's in `registry_site.catalogue.api`, uploads
and the run queue's in `submissions.api`); this table is the one place that says
which path serves which, so a new endpoint or version is one edit here. The runner
hosts' API is not public and has its own prefix (`/api/runner/v1/`,
`submissions.api.runner_host_urls`).
"""

from django.urls import path

from registry_site.catalogue.api.urls import urlpatterns as catalogue
from submissions.api import runqueue_v1 as runqueue
from submissions.api import v1 as submissions

urlpatterns = [
    *catalogue,
    path("submissions/", submissions.SubmissionList.as_view(), name="api_submissions"),
    path("submissions/<uuid:pk>/", submissions.SubmissionDetail.as_view(), name="api_submission"),
    path("run-requests/", runqueue.RunRequestList.as_view(), name="api_run_requests"),
    path("run-requests/<uuid:pk>/", runqueue.RunRequestDetail.as_view(), name="api_run_request"),
    path("run-requests/<uuid:pk>/cancel/", runqueue.RunRequestCancel.as_view(), name="api_run_request_cancel"),
    path("runner-hosts/", runqueue.RunnerHostList.as_view(), name="api_runner_hosts"),
]
