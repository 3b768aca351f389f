"""/api/v1/runs/ and /api/v1/runs/<id>/: filters, ordering, paging, conditional GET."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db


def _ids(response):
    assert response.status_code == 200, response.content
    return [run["id"] for run in response.json()["results"]]


def test_it_answers_an_envelope_of_public_runs_newest_first(client, catalogue):
    body = client.get("/api/v1/runs/").json()
    assert set(body) == {"count", "next", "previous", "results"}
    runs = catalogue["runs"]
    assert body["count"] == 3
    assert [r["id"] for r in body["results"]] == [runs["mlx_runtime"].pk, runs["runtime"].pk, runs["smoke"].pk]


def test_pack_filter_returns_only_that_pack(client, catalogue):
    smoke = client.get("/api/v1/runs/?pack=smoke-chat").json()["results"]
    assert [r["pack_id"] for r in smoke] == ["smoke-chat"]
    assert {r["pack_id"] for r in client.get("/api/v1/runs/?pack=runtime-sweep").json()["results"]} == {"runtime-sweep"}


@pytest.mark.parametrize("name", ["model", "runtime", "hardware_class", "pack_version"])
def test_each_exact_filter_hits_and_misses(client, catalogue, name):
    run = catalogue["runs"]["mlx_runtime"]
    value = getattr(run, name)
    hits = client.get("/api/v1/runs/", {name: value}).json()["results"]
    assert run.pk in [r["id"] for r in hits] and all(r[name] == value for r in hits)
    missing = client.get("/api/v1/runs/", {name: value + "-nope"})
    assert missing.status_code == 400 and name in missing.json()["fields"]


def test_provenance_filter(client, catalogue):
    assert _ids(client.get("/api/v1/runs/?provenance=operator-curated")) == [catalogue["runs"]["runtime"].pk]
    assert _ids(client.get("/api/v1/runs/?provenance=independently-reproduced")) == []


def test_date_range_filter(client, catalogue):
    day = catalogue["runs"]["smoke"].published_at.date()
    assert len(_ids(client.get(f"/api/v1/runs/?since={day}&until={day}"))) == 3
    assert _ids(client.get(f"/api/v1/runs/?until={day.replace(year=day.year - 1)}")) == []
    assert _ids(client.get(f"/api/v1/runs/?since={day.replace(year=day.year + 1)}")) == []


def test_ordering_whitelist(client, catalogue):
    runs = catalogue["runs"]
    assert _ids(client.get("/api/v1/runs/?order=id")) == sorted(r.pk for r in runs.values())
    assert _ids(client.get("/api/v1/runs/?order=-pack,id"))[0] == runs["smoke"].pk
    bad = client.get("/api/v1/runs/?order=submission__user__email")
    assert bad.status_code == 400 and list(bad.json()["fields"]) == ["order"]


def test_pages_link_to_each_other(client, catalogue):
    first = client.get("/api/v1/runs/?page_size=2&order=id").json()
    assert first["previous"] is None and first["next"].endswith("page=2&page_size=2") or "page=2" in first["next"]
    second = client.get(first["next"]).json()
    assert second["next"] is None and second["previous"] is not None
    assert len(first["results"]) == 2 and len(second["results"]) == 1


def test_detail_has_cases_and_reproduction(client, catalogue):
    run = catalogue["runs"]["runtime"]
    body = client.get(f"/api/v1/runs/{run.pk}/").json()
    assert body["id"] == run.pk and body["case_count"] == len(body["cases"]) > 0
    assert set(body["reproduction"]) == {"state", "evidence", "reproduces", "attempts"}


def test_list_answers_304_to_a_matching_etag(client, catalogue):
    first = client.get("/api/v1/runs/?pack=smoke-chat")
    etag = first.headers["ETag"]
    again = client.get("/api/v1/runs/?pack=smoke-chat", HTTP_IF_NONE_MATCH=etag)
    assert again.status_code == 304 and again.content == b""
    other = client.get("/api/v1/runs/?pack=runtime-sweep", HTTP_IF_NONE_MATCH=etag)
    assert other.status_code == 200 and other.headers["ETag"] != etag


def test_a_matching_etag_is_answered_without_running_the_view(client, catalogue):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    url = "/api/v1/leaderboards/runtime-sweep/?order=ttft_s"
    etag = client.get(url)["ETag"]
    with CaptureQueriesContext(connection) as queries:
        again = client.get(url, HTTP_IF_NONE_MATCH=etag)
    assert again.status_code == 304 and again["ETag"] == etag
    # the generation, and the throttle's count (a 304 is counted: the database cache in these tests)
    catalogue_queries = [q["sql"] for q in queries if "benchpack_cache" not in q["sql"] and "SAVEPOINT" not in q["sql"]]
    assert len(catalogue_queries) == 1, catalogue_queries
    assert client.get(url, HTTP_ACCEPT="text/csv")["ETag"] != etag  # another representation


def test_the_etag_changes_when_the_catalogue_does(client, catalogue, submitter):
    from registry_site.catalogue import transitions

    url = "/api/v1/runs/"
    etag = client.get(url)["ETag"]
    assert transitions.withdraw(catalogue["runs"]["smoke"].pk, submitter, "wrong flags")
    after = client.get(url, HTTP_IF_NONE_MATCH=etag)
    assert after.status_code == 200 and after["ETag"] != etag
    assert catalogue["runs"]["smoke"].pk not in [r["id"] for r in after.json()["results"]]


def test_errors_carry_no_etag(client, catalogue):
    assert "ETag" not in client.get("/api/v1/runs/?pack=nope")
