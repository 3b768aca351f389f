"""The API throttle against a real Redis, as deployed (CACHE_URL): one counter per client and window,
counted by one script call, readable through Django's cache, expiring with its window, atomic under
simultaneous requests, and the same on a cached answer (registry_site/catalogue/cache.py) as on a render."""

from __future__ import annotations

import threading

import pytest

from tests.service.live import require_redis
from tests.workers import redis_db, redis_url

REDIS_DB = redis_db(12)  # this xdist worker's database (tests/workers.py)


@pytest.fixture
def redis_cache(settings):
    require_redis()
    import redis
    from rest_framework.throttling import AnonRateThrottle

    from registry_site.catalogue.api import throttles

    url = redis_url(REDIS_DB)
    redis.Redis.from_url(url).flushdb()
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": url}}
    rates = AnonRateThrottle.THROTTLE_RATES
    AnonRateThrottle.THROTTLE_RATES = {**rates, "anon": "3/minute"}
    throttles._COUNTERS.clear()
    throttles.DEFERRED.reset()
    yield redis.Redis.from_url(url)
    AnonRateThrottle.THROTTLE_RATES = rates
    throttles.DEFERRED.reset()
    throttles._COUNTERS.clear()


@pytest.fixture
def cached_catalogue(settings):
    from registry_site.catalogue.cache import RESPONSES, bump

    settings.CATALOGUE_RESPONSE_CACHE = True
    RESPONSES.clear()
    bump()
    yield
    RESPONSES.clear()


def anon_rate(rate: str) -> None:
    from rest_framework.throttling import AnonRateThrottle

    AnonRateThrottle.THROTTLE_RATES = {**AnonRateThrottle.THROTTLE_RATES, "anon": rate}


def test_a_client_gets_its_rate_then_429_counted_in_redis(client, redis_cache, db):
    from django.core.cache import cache

    codes = [client.get("/api/v1/runs/").status_code for _ in range(5)]
    assert codes == [200, 200, 200, 429, 429]
    keys = [key.decode() for key in redis_cache.keys("*throttle_anon*")]
    assert len(keys) == 1, keys
    assert 0 < redis_cache.ttl(keys[0]) <= 61  # gone with its window
    assert cache.get(keys[0].split(":", 2)[2]) == 5  # Django's cache reads the same counter


def test_simultaneous_requests_are_each_counted_once(redis_cache, db):
    from registry_site.catalogue.api.throttles import count_request

    numbers: list[int] = []
    lock = threading.Lock()
    start = threading.Barrier(16)

    def one() -> None:
        start.wait()
        number = count_request("throttle_anon_198.51.100.7_1", 61)
        with lock:
            numbers.append(number)

    threads = [threading.Thread(target=one) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(numbers) == list(range(1, 17))


def test_a_cached_answer_is_throttled_like_a_rendered_one(client, redis_cache, cached_catalogue, db):
    responses = [client.get("/api/v1/leaderboards/") for _ in range(5)]
    assert [r.status_code for r in responses] == [200, 200, 200, 429, 429]
    assert [r.get("X-Catalogue-Cache") for r in responses[:3]] == [None, "hit", "hit"]


def test_within_one_process_the_limit_is_exact_on_cached_answers(client, redis_cache, cached_catalogue, db):
    anon_rate("10/minute")
    codes = [client.get("/api/v1/leaderboards/").status_code for _ in range(30)]
    assert codes == [200] * 10 + [429] * 20


def test_cached_answers_far_below_the_limit_are_counted_in_one_later_write(client, redis_cache, cached_catalogue, db):
    from registry_site.catalogue.api import throttles

    anon_rate("10000/minute")  # deferred counting is for high limits only (DEFER_MIN_REQUESTS)
    throttles.DEFERRED.background = False  # the test writes by hand
    assert [client.get("/api/v1/leaderboards/").status_code for _ in range(11)] == [200] * 11
    [key] = redis_cache.keys("*throttle_anon*")
    assert int(redis_cache.get(key)) == 1  # the rendered answer, counted on the spot
    throttles.DEFERRED.flush()
    assert int(redis_cache.get(key)) == 11  # and the 10 cached ones, in one write
    assert 0 < redis_cache.ttl(key) <= 61


def test_a_failed_write_keeps_the_tallies_for_the_next(client, redis_cache, cached_catalogue, db, monkeypatch):
    from registry_site.catalogue.api import throttles

    anon_rate("10000/minute")
    throttles.DEFERRED.background = False  # no background write in this test
    for _ in range(6):
        assert client.get("/api/v1/leaderboards/").status_code == 200
    def unreachable(**kwargs):
        raise ConnectionError("redis went away")

    [(server, (_, redis_client))] = throttles._COUNTERS.items()
    with monkeypatch.context() as patch:
        patch.setitem(throttles._COUNTERS, server, (unreachable, redis_client))
        with pytest.raises(ConnectionError):
            throttles.DEFERRED.flush()
    throttles.DEFERRED.flush()
    [key] = redis_cache.keys("*throttle_anon*")
    assert int(redis_cache.get(key)) == 6


def test_the_background_writer_writes_the_tallies_within_moments(client, redis_cache, cached_catalogue, db):
    import time

    anon_rate("10000/minute")
    assert [client.get("/api/v1/leaderboards/").status_code for _ in range(5)] == [200] * 5
    [key] = redis_cache.keys("*throttle_anon*")
    deadline = time.monotonic() + 5
    while int(redis_cache.get(key)) != 5 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert int(redis_cache.get(key)) == 5


def test_at_an_ordinary_rate_a_cached_answer_is_counted_on_the_spot(client, redis_cache, cached_catalogue, db):
    from registry_site.catalogue.api import throttles

    anon_rate("120/minute")
    throttles.DEFERRED.background = False  # nothing may wait for a background write
    assert [client.get("/api/v1/leaderboards/").status_code for _ in range(7)] == [200] * 7
    [key] = redis_cache.keys("*throttle_anon*")
    assert int(redis_cache.get(key)) == 7


def test_a_fresh_process_admits_no_more_than_the_window_has_left(client, redis_cache, cached_catalogue, db):
    """Another web process has counted 118 of this client's 120: a process that never saw the client
    (a fresh worker) lets exactly 2 more through, cached or not (it used to defer up to 59)."""
    import time

    from registry_site.catalogue.api import throttles

    from django.core.cache import cache

    anon_rate("120/minute")
    if time.time() % 60 > 50:
        time.sleep(60.5 - time.time() % 60)  # the whole test inside one window
    key = cache.make_and_validate_key(f"throttle_anon_127.0.0.1_{int(time.time() // 60)}")
    redis_cache.set(key, 118, ex=61)
    throttles.DEFERRED.reset()  # this process knows nothing, as a fresh worker
    codes = [client.get("/api/v1/leaderboards/").status_code for _ in range(20)]
    assert codes == [200, 200] + [429] * 18


def test_a_conditional_request_is_counted(client, redis_cache, db):
    first = client.get("/api/v1/runs/")
    etag = first["ETag"]
    codes = [client.get("/api/v1/runs/", HTTP_IF_NONE_MATCH=etag).status_code for _ in range(4)]
    assert codes == [304, 304, 429, 429]  # 3/minute in this module: the 200 and two 304s
