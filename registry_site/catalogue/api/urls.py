"""The catalogue's endpoints of the public API; `registry_site.api_v1` mounts them under /api/v1/ with the others."""

from django.urls import path

from registry_site import converters

converters.register()  # ids in URLs: exactly the grammar of benchpack.ids

from registry_site.catalogue.api import answer, cases, compare, entities, leaderboards, runs, timelines
from registry_site.catalogue.api.docs import SchemaView

urlpatterns = [
    path("runs/", runs.RunList.as_view(), name="api_runs"),
    path("runs/<str:pk>/", runs.RunDetail.as_view(), name="api_run"),
    path("cases/", cases.CaseList.as_view(), name="api_cases"),
    path("systems/", entities.SystemList.as_view(), name="api_systems"),
    path("systems/<str:system_key>/", entities.SystemDetail.as_view(), name="api_system"),
    path("leaderboards/", leaderboards.BoardIndex.as_view(), name="api_leaderboards"),
    path("leaderboards/<packid:pack_id>/", leaderboards.PackBoard.as_view(), name="api_leaderboard_pack"),
    path("leaderboards/<packid:pack_id>/<boardkey:case>/", leaderboards.CaseBoard.as_view(), name="api_leaderboard_case"),
    path("compare/", compare.Compare.as_view(), name="api_compare"),
    path("timelines/", timelines.Timeline.as_view(), name="api_timeline"),
    path("models/", entities.ModelIndex.as_view(), name="api_models"),
    path("models/<modelid:name>/", entities.ModelDetail.as_view(), name="api_model"),
    path("runtimes/", entities.RuntimeIndex.as_view(), name="api_runtimes"),
    path("runtimes/<name:name>/", entities.RuntimeDetail.as_view(), name="api_runtime"),
    path("hardware-classes/", entities.HardwareIndex.as_view(), name="api_hardware_classes"),
    path("hardware-classes/<name:name>/", entities.HardwareDetail.as_view(), name="api_hardware_class"),
    path("answer/", answer.Answer.as_view(), name="api_answer"),
    path("schema/", SchemaView.as_view(), name="api_schema"),
]
