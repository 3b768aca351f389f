"""/api/v1/cases/: per-case medians of public runs, filtered."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db


def test_filters_hit_and_miss(client, catalogue):
    run = catalogue["runs"]["runtime"]
    by_run = client.get(f"/api/v1/cases/?run={run.pk}&page_size=500").json()
    assert by_run["count"] == run.cases.count() and {c["run"] for c in by_run["results"]} == {run.pk}
    case = by_run["results"][0]["case"]
    same_case = client.get("/api/v1/cases/", {"pack": run.pack_id, "case": case}).json()["results"]
    assert {c["case"] for c in same_case} == {case} and len(same_case) == 2
    workload = by_run["results"][0]["workload_key"]
    assert {c["workload_key"] for c in client.get(f"/api/v1/cases/?workload={workload}").json()["results"]} == {workload}
    assert client.get("/api/v1/cases/?case=no-such-case").status_code == 400


def test_order_by_a_metric(client, catalogue):
    rows = client.get("/api/v1/cases/?order=-ttft_s&page_size=500").json()["results"]
    speeds = [r["ttft_s"] for r in rows if r["ttft_s"] is not None]
    assert speeds == sorted(speeds, reverse=True)
    assert "order" in client.get("/api/v1/cases/?order=run__submission").json()["fields"]
    # the legacy output ÷ (wall − TTFT) is never a ranking
    assert "order" in client.get("/api/v1/cases/?order=decode_tps").json()["fields"]
