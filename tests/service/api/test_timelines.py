"""/api/v1/timelines/: one workload's metric for a model + hardware class, with change-detection verdicts."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db


def _query(run, case, **extra):
    return {"workload": case.workload_key, "model": run.model, "hardware_class": run.hardware_class, **extra}


def test_points_carry_their_verdict_and_the_rule(client, catalogue):
    run = catalogue["runs"]["runtime"]
    case = run.cases.order_by("pk").first()
    # The seed's rows predate tpot_s, so they have no decode figure (1/tpot_s): their timeline is TTFT's.
    assert client.get("/api/v1/timelines/", _query(run, case)).json()["points"][0]["value"] is None
    body = client.get("/api/v1/timelines/", _query(run, case, metric="wall_s")).json()
    assert [p["run"] for p in body["points"]] == [run.pk]
    assert body["points"][0]["value"] == case.wall_s
    assert body["points"][0]["change"]["verdict"] == "no-verdict"  # one run is no evidence
    assert body["rule"]["min_prior"] >= 1 and body["higher_is_better"] is False
    assert client.get("/api/v1/timelines/", _query(run, case)).json()["higher_is_better"] is True  # decode
    assert body["series"]["model"] == run.model
    assert client.get("/api/v1/timelines/", _query(run, case, metric="ttft_s")).json()["higher_is_better"] is False


def test_a_series_is_one_model_on_one_workload(client, catalogue):
    run, other = catalogue["runs"]["runtime"], catalogue["runs"]["mlx_runtime"]
    case = run.cases.order_by("pk").first()
    body = client.get("/api/v1/timelines/", _query(run, case)).json()
    assert other.pk not in [p["run"] for p in body["points"]]
    assert {s["model"] for s in body["other_series"]} >= {run.model}


@pytest.mark.parametrize("change, parameter", [({"metric": "colour"}, "metric"), ({"model": "nobody"}, "model"),
                                               ({"workload": "nope"}, "workload"), ({"workload": ""}, "workload"),
                                               ({"hardware_class": "toaster"}, "hardware_class"),
                                               ({"runtime": "teapot"}, "runtime"), ({"pack": "x"}, "pack")])
def test_bad_requests_are_named(client, catalogue, change, parameter):
    run = catalogue["runs"]["runtime"]
    params = {**_query(run, run.cases.first()), **change}
    response = client.get("/api/v1/timelines/", params)
    assert response.status_code == 400 and parameter in response.json()["fields"], response.content


def test_a_step_with_enough_prior_runs_is_flagged_with_its_evidence(client, publish_variant):
    base = "2026-04-29-llama-server-runtime"
    runs = [publish_variant(base, f"b100-{i}", speed=speed, runtime=("llama.cpp", "b100"))
            for i, speed in enumerate((1.0, 1.01, 0.99, 1.02, 0.98))]
    runs += [publish_variant(base, f"b200-{i}", speed=speed, runtime=("llama.cpp", "b200"))
             for i, speed in enumerate((0.5, 0.51, 0.49))]  # the step, confirmed by the runs after it
    case = runs[-1].cases.get(case="short")
    body = client.get("/api/v1/timelines/", {"workload": case.workload_key, "model": runs[-1].model,
                                             "hardware_class": runs[-1].hardware_class, "runtime": "llama.cpp"}).json()
    assert [p["run"] for p in body["points"]] == [r.pk for r in runs]
    verdicts = [p["change"]["verdict"] for p in body["points"]]
    assert verdicts[:6] == ["no-verdict"] * 5 + ["regression"], verdicts
    assert "regression" not in verdicts[6:] and "improvement" not in verdicts  # flagged once, where it started
    step = body["points"][5]["change"]
    assert step["prior"] == 5 and step["change"] == pytest.approx(-0.5, abs=0.03)
    assert step["reason"], step
    assert body["rule"]["confirm"] >= 1
    assert [(v["runtime_version"], v["runs"]) for v in body["versions"]] == [("llama.cpp b100", 5), ("llama.cpp b200", 3)]


def test_limit_keeps_the_newest_points_and_counts_them_all(client, catalogue, monkeypatch):
    from registry_site.catalogue.api import timelines

    run = catalogue["runs"]["runtime"]
    case = run.cases.order_by("pk").first()
    body = client.get("/api/v1/timelines/", _query(run, case, limit="1")).json()
    assert body["points_total"] == 1 and len(body["points"]) == 1
    for bad in ("0", "x", "1.5", str(timelines.MAX_POINTS + 1)):
        error = client.get("/api/v1/timelines/", _query(run, case, limit=bad))
        assert error.status_code == 400 and "limit" in error.json()["fields"], bad
