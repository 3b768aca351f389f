"""/api/v1/compare/: 2–4 public runs side by side, with reasons when they are not comparable."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db


def test_two_runs_of_one_pack_compare_case_by_case(client, catalogue):
    a, b = catalogue["runs"]["runtime"], catalogue["runs"]["mlx_runtime"]
    body = client.get(f"/api/v1/compare/?runs={a.pk},{b.pk}").json()
    assert [r["run_id"] for r in body["runs"]] == [a.pk, b.pk]
    assert body["comparable"] is True and body["reasons"] == []
    assert body["case_count"] == len(body["cases"]) > 0
    assert all(len(line["cells"]) == 2 for line in body["cases"])


def test_different_packs_say_why(client, catalogue):
    a, b = catalogue["runs"]["runtime"], catalogue["runs"]["smoke"]
    body = client.get(f"/api/v1/compare/?runs={a.pk}&runs={b.pk}").json()
    assert body["comparable"] is False and "different packs" in body["reasons"][0]


@pytest.mark.parametrize("query, parameter", [("", "runs"), ("runs=1", "runs"), ("runs=a,b", "runs"),
                                               ("runs=1,2,3,4,5", "runs"), ("runs=1,2&page=0", "page"),
                                               ("runs=1,2&colour=red", "colour")])
def test_bad_requests_are_named(client, catalogue, query, parameter):
    response = client.get(f"/api/v1/compare/?{query}")
    assert response.status_code == 400 and parameter in response.json()["fields"]
