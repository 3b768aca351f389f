"""URLs of the public pages (registry_site.catalogue.pages); included from registry_site.urls."""

from django.urls import path

from registry_site import converters

converters.register()  # ids in URLs: exactly the grammar of benchpack.ids

from registry_site.catalogue.pages import (answer, compare, depth_curves, entities, leaderboards, moderation, runs,  # noqa: E402
                                          systems, timelines)

urlpatterns = [
    path("runs/<int:pk>/", runs.run_detail, name="run_detail"),
    path("runs/<int:pk>/rows.jsonl", runs.rows_jsonl, name="run_rows_jsonl"),
    path("runs/<int:pk>/rows.csv", runs.rows_csv, name="run_rows_csv"),
    path("runs/<int:pk>/withdraw/", moderation.withdraw, name="run_withdraw"),
    path("runs/<int:pk>/unpublish/", moderation.unpublish, name="run_unpublish"),
    path("runs/<int:pk>/republish/", moderation.republish, name="run_republish"),
    path("runs/<int:pk>/flag/", moderation.flag, name="run_flag"),
    path("runs/<int:pk>/unflag/", moderation.unflag, name="run_unflag"),
    path("answer/", answer.answer, name="answer"),
    path("systems/<slug:system_key>/", systems.system_page, name="system_page"),
    path("leaderboards/", leaderboards.index, name="leaderboards"),
    path("leaderboards/coding/", leaderboards.coding, name="leaderboard_coding"),
    path("leaderboards/<packid:pack_id>/", leaderboards.board, name="leaderboard_pack"),
    path("leaderboards/<packid:pack_id>/<boardkey:case>/", leaderboards.board, name="leaderboard_case"),
    path("depth-curves/<packid:pack_id>/", depth_curves.depth_curves, name="depth_curves"),
    path("compare/", compare.compare, name="compare"),
    path("timelines/", timelines.timeline, name="timeline"),
    path("models/", entities.entity_index, {"kind": "model"}, name="entity_index_model"),
    path("models/<modelid:value>/", entities.entity_page, {"kind": "model"}, name="model_page"),
    path("runtimes/", entities.entity_index, {"kind": "runtime"}, name="entity_index_runtime"),
    path("runtimes/<name:value>/", entities.entity_page, {"kind": "runtime"}, name="runtime_page"),
    path("hardware/", entities.entity_index, {"kind": "hardware"}, name="entity_index_hardware"),
    path("hardware/<name:value>/", entities.entity_page, {"kind": "hardware"}, name="hardware_page"),
]
