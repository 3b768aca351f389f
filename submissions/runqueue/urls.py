from django.urls import path

from submissions.api import runqueue_v1 as api
from submissions.runqueue import views

app_name = "runqueue"

urlpatterns = [
    path("runner-hosts/", views.hosts, name="hosts"),
    path("run-requests/", views.request_list, name="list"),
    path("run-requests/new/", views.new_request, name="new"),
    path("run-requests/<uuid:pk>/", views.detail, name="detail"),
    path("run-requests/<uuid:pk>/live/", views.live, name="live"),
    path("run-requests/<uuid:pk>/cancel/", views.cancel, name="cancel"),
    path("runs/<int:pk>/reproduce/", views.reproduce, name="reproduce"),
    path("api/v1/run-requests/", api.RunRequestList.as_view(), name="api_list"),
    path("api/v1/run-requests/<uuid:pk>/", api.RunRequestDetail.as_view(), name="api_detail"),
    path("api/v1/run-requests/<uuid:pk>/cancel/", api.RunRequestCancel.as_view(), name="api_cancel"),
    path("api/v1/runner-hosts/", api.RunnerHostList.as_view(), name="api_hosts"),
]
