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
    throttles.COUNT_SCRIPT.reset()
    throttles.DEFERRED.reset()
    yield redis.Redis.from_url(url)
    AnonRateThrottle.THROTTLE_RATES = rates
    throttles.DEFERRED.reset()
    throttles.COUNT_SCRIPT.reset()


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
    def unreachable(*args):
        raise ConnectionError("redis went away")

    with monkeypatch.context() as patch:
        patch.setattr(throttles.COUNT_SCRIPT, "run", unreachable)
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


def test_counts_that_arrive_together_share_round_trips_and_each_gets_its_own_total(redis_cache, monkeypatch):
    """While one thread waits for Redis, the others queue: one script call carries them all, and every
    request still learns its exact total (the bound does not loosen)."""
    import time

    from registry_site.catalogue.api import throttles

    round_trips: list[int] = []
    run = throttles.COUNT_SCRIPT.run

    def slow_run(server, keys, args):  # a round trip long enough for the others to queue behind it
        round_trips.append(len(keys))
        time.sleep(0.02)
        return run(server, keys, args)

    monkeypatch.setattr(throttles.COUNT_SCRIPT, "run", slow_run)
    totals: dict[str, list[int]] = {"a": [], "b": []}
    lock = threading.Lock()
    start = threading.Barrier(16)

    def one(client: str) -> None:
        start.wait()
        for _ in range(5):
            total = throttles.count_request(f"throttle_anon_{client}_1", 61)
            with lock:
                totals[client].append(total)

    threads = [threading.Thread(target=one, args=("ab"[n % 2],)) for n in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(totals["a"]) == list(range(1, 41)) and sorted(totals["b"]) == list(range(1, 41))
    assert sum(round_trips) == 80
    assert len(round_trips) < 40 and max(round_trips) > 1, round_trips  # shared, not one each
    assert not throttles.ROUND_TRIPS.sending and not any(throttles.ROUND_TRIPS.queues.values())


def test_a_failed_shared_round_trip_falls_back_for_every_request_in_it(redis_cache, monkeypatch, caplog):
    """Redis fails under a queue of waiters: each of them is counted per process, none raises, and the
    next count after the outage goes to Redis again."""
    import time

    from redis.exceptions import ConnectionError as RedisConnectionError

    from registry_site.cache import FALLBACK, OUTAGE
    from registry_site.catalogue.api import throttles

    def failing_run(server, keys, args):
        time.sleep(0.02)
        raise RedisConnectionError("redis went away")

    FALLBACK.clear()
    monkeypatch.setattr(throttles.COUNT_SCRIPT, "run", failing_run)
    totals: list[int] = []
    start = threading.Barrier(8)

    def one() -> None:
        start.wait()
        totals.append(throttles.count_request("throttle_anon_198.51.100.8_1", 61))

    threads = [threading.Thread(target=one) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(totals) == list(range(1, 9))  # all counted, in this process's fallback
    assert not throttles.ROUND_TRIPS.sending
    monkeypatch.undo()
    OUTAGE.down_until = 0.0  # as after RETRY_AFTER_S
    assert throttles.count_request("throttle_anon_198.51.100.8_1", 61) == 1  # Redis's own count again
    assert OUTAGE.since is None
    FALLBACK.clear()


def test_a_connection_the_server_closed_is_replaced_without_an_outage(redis_cache):
    from registry_site.cache import OUTAGE
    from registry_site.catalogue.api import throttles

    assert throttles.count_request("throttle_anon_198.51.100.9_1", 61) == 1
    redis_cache.client_kill_filter(_type="normal", skipme=True)  # this thread's kept connection among them
    assert throttles.count_request("throttle_anon_198.51.100.9_1", 61) == 2
    assert OUTAGE.since is None  # no fallback, no log: the retry went through


def test_a_flushed_script_cache_is_loaded_again(redis_cache):
    from registry_site.catalogue.api import throttles

    assert throttles.count_request("throttle_anon_198.51.100.10_1", 61) == 1
    redis_cache.script_flush()  # as after a restart of Redis
    assert throttles.count_request("throttle_anon_198.51.100.10_1", 61) == 2


@pytest.mark.parametrize("num_proxies", [None, 0, 1, 2])
@pytest.mark.parametrize("forwarded", [None, "", "203.0.113.7", "203.0.113.7, 198.51.100.9",
                                       " 203.0.113.7 ,198.51.100.9 , 192.0.2.1", "a,,b", "x y"])
def test_the_client_address_is_read_as_drf_reads_it(rf, num_proxies, forwarded):
    """The throttle reads X-Forwarded-For from META (DRF's get_ident builds request.headers for it)."""
    from rest_framework.settings import api_settings
    from rest_framework.throttling import AnonRateThrottle

    from registry_site.catalogue.api.throttles import AnonymousRateThrottle

    headers = {} if forwarded is None else {"HTTP_X_FORWARDED_FOR": forwarded}
    request = rf.get("/api/v1/runs/", REMOTE_ADDR="198.51.100.1", **headers)
    saved = api_settings.NUM_PROXIES
    api_settings.NUM_PROXIES = num_proxies
    try:
        assert AnonymousRateThrottle().get_ident(request) == AnonRateThrottle().get_ident(request)
    finally:
        api_settings.NUM_PROXIES = saved


def test_a_forked_child_counts_on_connections_of_its_own(redis_cache):
    """A process forked after counting (a worker forked from a parent that served requests) would
    otherwise share its parent's socket, and the two processes could read each other's replies."""
    import os

    from registry_site.catalogue.api import throttles

    assert throttles.count_request("throttle_anon_198.51.100.11_1", 61) == 1
    parent_connections = dict(throttles.COUNT_SCRIPT.local.connections)
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # the child: count twice, report whether its connection was its own
        try:
            throttles.count_request("throttle_anon_198.51.100.11_1", 61)
            total = throttles.count_request("throttle_anon_198.51.100.11_1", 61)
            own = all(throttles.COUNT_SCRIPT.local.connections[server] is not connection
                      for server, connection in parent_connections.items())
            os.write(write, f"{total} {own}".encode())
        finally:
            os._exit(0)
    os.close(write)
    os.waitpid(child, 0)
    assert os.read(read, 100).decode() == "3 True"
    assert throttles.count_request("throttle_anon_198.51.100.11_1", 61) == 4  # the parent's connection still works
