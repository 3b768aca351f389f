from django.urls import path

from submissions import views

app_name = "submissions"

urlpatterns = [
    path("submissions/", views.my_submissions, name="list"),
    path("submissions/new/", views.upload, name="upload"),
    path("submissions/<uuid:pk>/", views.detail, name="detail"),
    path("submissions/<uuid:pk>/status/", views.status_fragment, name="status"),
    path("review/", views.review_queue, name="review_queue"),
    path("review/<uuid:pk>/", views.review_detail, name="review_detail"),
    path("review/<uuid:pk>/approve/", views.approve_view, name="approve"),
    path("review/<uuid:pk>/reject/", views.reject_view, name="reject"),
    path("review/<uuid:pk>/override-plausibility/", views.override_plausibility_view, name="override_plausibility"),
]
