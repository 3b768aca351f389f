from django.urls import path

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
]
