"""One representative request per endpoint on the catalogue fixture: (name, url, OpenAPI path, status)."""

from __future__ import annotations


def endpoint_requests(catalogue) -> list[tuple[str, str, str]]:
    from registry_site.catalogue.models import PublishedCase

    runs = catalogue["runs"]
    run = runs["runtime"]
    first = PublishedCase.objects.filter(run=run).order_by("pk").first()
    case = first.case
    timeline = f"workload={first.workload_key}&model={run.model}&hardware_class={run.hardware_class}&metric=decode_rate"
    return [
        ("runs_list", "/api/v1/runs/", "/api/v1/runs/"),
        ("runs_list_smoke", "/api/v1/runs/?pack=smoke-chat", "/api/v1/runs/"),
        ("runs_detail", f"/api/v1/runs/{runs['smoke'].pk}/", "/api/v1/runs/{id}/"),
        ("cases_list", "/api/v1/cases/?pack=smoke-chat", "/api/v1/cases/"),
        ("systems_list", "/api/v1/systems/", "/api/v1/systems/"),
        ("systems_detail", f"/api/v1/systems/{run.system_key}/", "/api/v1/systems/{system_key}/"),
        ("leaderboards_index", "/api/v1/leaderboards/", "/api/v1/leaderboards/"),
        ("leaderboard_pack", f"/api/v1/leaderboards/{run.pack_id}/", "/api/v1/leaderboards/{pack_id}/"),
        ("leaderboard_case", f"/api/v1/leaderboards/{run.pack_id}/{case}/?order=ttft_s",
         "/api/v1/leaderboards/{pack_id}/{case}/"),
        ("compare", f"/api/v1/compare/?runs={run.pk},{runs['mlx_runtime'].pk}", "/api/v1/compare/"),
        ("timelines", f"/api/v1/timelines/?{timeline}", "/api/v1/timelines/"),
        ("answer", f"/api/v1/answer/?work={run.pack_id}&max_ttft=1000", "/api/v1/answer/"),
        ("models_list", "/api/v1/models/", "/api/v1/models/"),
        ("models_detail", f"/api/v1/models/{run.model}/", "/api/v1/models/{name}/"),
        ("runtimes_list", "/api/v1/runtimes/", "/api/v1/runtimes/"),
        ("hardware_classes_list", "/api/v1/hardware-classes/", "/api/v1/hardware-classes/"),
        ("hardware_classes_detail", f"/api/v1/hardware-classes/{run.hardware_class}/",
         "/api/v1/hardware-classes/{name}/"),
    ]


def run_names(catalogue) -> dict[int, str]:
    return {run.pk: name for name, run in catalogue["runs"].items()}
