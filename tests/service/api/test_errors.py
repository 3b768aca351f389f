"""Every answer under /api/ is JSON in one shape, errors included; hostile parameters get a 400/404 naming them."""

from __future__ import annotations

import pytest
from django.test import override_settings

pytestmark = pytest.mark.django_db

SHAPE = {"error", "status", "code"}


def _error(response, status):
    assert response.status_code == status, (response.status_code, response.content[:300])
    assert response["Content-Type"].startswith("application/json"), response["Content-Type"]
    body = response.json()
    assert SHAPE <= set(body) <= SHAPE | {"fields"}, body
    assert body["status"] == status and isinstance(body["error"], str) and body["error"]
    return body


@pytest.mark.parametrize("query, parameter", [
    ("pack=no-such-pack", "pack"),
    ("model=%00", "model"),
    ("provenance=bogus", "provenance"),
    ("order=secret", "order"),
    ("order=-", "order"),
    ("page_size=100000000", "page_size"),
    ("page_size=NaN", "page_size"),
    ("page_size=-1", "page_size"),
    ("page_size=0", "page_size"),
    ("page=NaN", "page"),
    ("page=1e3", "page"),
    ("since=NaN", "since"),
    ("until=2026-13-45", "until"),
    ("packs=smoke-chat", "packs"),
])
def test_hostile_query_parameters_are_named(client, catalogue, query, parameter):
    body = _error(client.get(f"/api/v1/runs/?{query}"), 400)
    assert list(body["fields"]) == [parameter] and parameter in body["error"]


def test_a_page_past_the_end_is_a_404_that_says_so(client, catalogue):
    assert "past the last page" in _error(client.get("/api/v1/runs/?page=99"), 404)["error"]


@pytest.mark.parametrize("run_id", ["abc", "-1", "1.5", "NaN", "99999999999999999999999999", "１"])
def test_a_malformed_run_id_is_a_json_404_naming_it(client, catalogue, run_id):
    body = _error(client.get(f"/api/v1/runs/{run_id}/"), 404)
    assert "whole numbers" in body["error"]


def test_an_unknown_run_id_is_a_json_404(client, catalogue):
    missing = max(r.pk for r in catalogue["runs"].values()) + 1
    assert _error(client.get(f"/api/v1/runs/{missing}/"), 404)["error"] == f"no public run with id {missing}"


@pytest.mark.parametrize("debug", [False, True])
def test_unknown_api_paths_are_json_even_with_debug(client, db, debug):
    with override_settings(DEBUG=debug):
        _error(client.get("/api/v2/runs/"), 404)
        assert "did you mean /api/v1/runs/" in _error(client.get("/api/v1/runs"), 404)["error"]
        assert "did you mean" in _error(client.post("/api/v1/runs"), 404)["error"]


def test_a_wrong_method_is_a_json_405(client, db):
    body = _error(client.post("/api/v1/runs/"), 405)
    assert body["code"] == "method_not_allowed"


def test_a_server_error_under_api_is_json_without_a_traceback(client, db, monkeypatch):
    from registry_site.catalogue.api import runs

    def explode(self):
        raise RuntimeError("secret internal detail")

    monkeypatch.setattr(runs.RunList, "get_queryset", explode)
    client.raise_request_exception = False
    with override_settings(DEBUG=False):
        body = _error(client.get("/api/v1/runs/"), 500)
    assert "secret" not in body["error"] and "Traceback" not in body["error"]


def test_a_bad_host_under_api_is_a_json_400(client, db):
    with override_settings(DEBUG=False):
        _error(client.get("/api/v1/runs/", HTTP_HOST="evil.example"), 400)


def test_throttled_requests_are_json_with_retry_after(client, db):
    from rest_framework.settings import api_settings
    from rest_framework.throttling import AnonRateThrottle

    AnonRateThrottle.THROTTLE_RATES = {**api_settings.DEFAULT_THROTTLE_RATES, "anon": "2/minute"}
    try:
        responses = [client.get("/api/v1/runs/") for _ in range(3)]
    finally:
        AnonRateThrottle.THROTTLE_RATES = api_settings.DEFAULT_THROTTLE_RATES
    body = _error(responses[-1], 429)
    assert body["code"] == "throttled" and int(responses[-1]["Retry-After"]) > 0


def test_the_non_api_404_stays_the_sites_page(client, db):
    with override_settings(DEBUG=False):
        response = client.get("/no/such/page/")
    assert response.status_code == 404 and b"Benchpack registry" in response.content


def test_an_anonymous_request_is_counted_once(client, db):
    from django.core.cache import cache
    from django.db import connection

    cache.clear()
    client.get("/api/v1/runs/")
    with connection.cursor() as cursor:
        cursor.execute("SELECT cache_key FROM benchpack_cache WHERE cache_key LIKE '%throttle%'")
        keys = [row[0] for row in cursor.fetchall()]
    assert len(keys) == 1 and "throttle_anon" in keys[0], keys


def test_a_signed_in_user_is_throttled_by_user(client, submitter):
    from django.core.cache import cache
    from django.db import connection

    cache.clear()
    client.force_login(submitter)
    client.get("/api/v1/runs/")
    with connection.cursor() as cursor:
        cursor.execute("SELECT cache_key FROM benchpack_cache WHERE cache_key LIKE '%throttle%'")
        keys = [row[0] for row in cursor.fetchall()]
    assert len(keys) == 1 and keys[0].startswith(f":1:throttle_user_{submitter.pk}_"), keys


def test_a_parameter_given_twice_is_refused(client, catalogue):
    body = _error(client.get("/api/v1/runs/?pack=smoke-chat&pack=runtime-sweep"), 400)
    assert list(body["fields"]) == ["pack"]
    runs = catalogue["runs"]
    assert client.get(f"/api/v1/compare/?runs={runs['runtime'].pk}&runs={runs['smoke'].pk}").status_code == 200


def test_refusals_stay_small_whatever_was_sent(client, catalogue):
    many = _error(client.get("/api/v1/runs/?" + "&".join(f"p{i}=1" for i in range(500))), 400)
    assert len(many["fields"]) == 11 and "490 more" in many["fields"]["non_field_errors"][0]
    for url in ("/api/v1/runs/?model=" + "x" * 100_000, "/api/v1/leaderboards/runtime-sweep/?since=" + "9" * 100_000):
        response = client.get(url)
        assert response.status_code == 400 and len(response.content) < 2_000, len(response.content)


@pytest.mark.parametrize("url, status", [("/api/v1/systems/%00/", 404), ("/api/v1/models/a%00b/", 404),
                                         ("/api/v1/leaderboards/%00/", 404),
                                         ("/api/v1/leaderboards/runtime-sweep/?model=%00", 400),
                                         ("/api/v1/timelines/?workload=%00&model=a&hardware_class=b", 400),
                                         ("/api/v1/compare/?runs=1,%00", 400)])
def test_nul_characters_never_reach_the_database(client, catalogue, url, status):
    _error(client.get(url), status)  # PostgreSQL refuses NUL in text: this would be a 500 there


def test_a_detail_is_not_paged(client, catalogue):
    assert list(_error(client.get(f"/api/v1/runs/{catalogue['runs']['smoke'].pk}/?page=2"), 400)["fields"]) == ["page"]


def test_the_throttle_keeps_one_counter_per_window_not_a_list_of_requests(client, db):
    import time

    from django.core.cache import cache
    from rest_framework.settings import api_settings
    from rest_framework.throttling import AnonRateThrottle

    cache.clear()
    AnonRateThrottle.THROTTLE_RATES = {**api_settings.DEFAULT_THROTTLE_RATES, "anon": "100000000/hour"}
    try:
        window = int(time.time() // 3600)
        for _ in range(30):
            assert client.get("/api/v1/leaderboards/").status_code == 200
    finally:
        AnonRateThrottle.THROTTLE_RATES = api_settings.DEFAULT_THROTTLE_RATES
    if int(time.time() // 3600) == window:  # (the hour did not turn during the loop)
        assert cache.get(f"throttle_anon_127.0.0.1_{window}") == 30
