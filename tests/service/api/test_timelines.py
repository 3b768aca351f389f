"""/api/v1/timelines/: one case's metric for a model + hardware class, with change-detection verdicts."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db


def _query(run, case, **extra):
    params = {"model": run.model, "hardware_class": run.hardware_class, "pack": run.pack_id, "case": case, **extra}
    return params


def test_points_carry_their_verdict_and_the_rule(client, catalogue):
    run = catalogue["runs"]["runtime"]
    case = run.cases.order_by("pk").first()
    body = client.get("/api/v1/timelines/", _query(run, case.case)).json()
    assert [p["run"] for p in body["points"]] == [run.pk]
    assert body["points"][0]["value"] == case.decode_tps
    assert body["points"][0]["change"]["verdict"] == "no-verdict"  # one run is no evidence
    assert body["rule"]["min_prior"] >= 1 and body["higher_is_better"] is True
    assert client.get("/api/v1/timelines/", _query(run, case.case, metric="ttft_s")).json()["higher_is_better"] is False


@pytest.mark.parametrize("change, parameter", [({"metric": "colour"}, "metric"), ({"model": "nobody"}, "model"),
                                               ({"case": "nope"}, "case"), ({"pack": ""}, "pack"),
                                               ({"hardware_class": "toaster"}, "hardware_class")])
def test_bad_requests_are_named(client, catalogue, change, parameter):
    run = catalogue["runs"]["runtime"]
    params = {**_query(run, run.cases.first().case), **change}
    response = client.get("/api/v1/timelines/", params)
    assert response.status_code == 400 and parameter in response.json()["fields"], response.content
