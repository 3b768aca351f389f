"""The shared cache while Redis is unreachable (registry_site/cache.py): every operation answers from a
per-process cache, nothing raises, and the outage is logged once, not once per operation."""

from __future__ import annotations

import logging

import pytest

from tests.service.live import free_port


@pytest.fixture
def unreachable_cache(monkeypatch):
    from registry_site import cache as module

    module.FALLBACK.clear()
    monkeypatch.setattr(module, "OUTAGE", module._Outage())
    return module.DegradingRedisCache(f"redis://127.0.0.1:{free_port()}/0", {})


def test_every_operation_degrades_to_the_process_and_is_logged_once(unreachable_cache, caplog, monkeypatch):
    from registry_site import cache as module

    cache = unreachable_cache
    with caplog.at_level(logging.WARNING, logger="registry_site.cache"):
        for _ in range(3):
            monkeypatch.setattr(module.OUTAGE, "down_until", 0.0)  # ask Redis each time, as after RETRY_AFTER_S
            assert cache.get("missing", "default") == "default"
        assert cache.add("counter", 1, 60) is True
        assert cache.incr("counter", 2) == 3
        cache.set("k", {"v": 1}, 60)
        assert cache.get("k") == {"v": 1}
        assert cache.get_many(["k", "missing"]) == {"k": {"v": 1}}
        with pytest.raises(ValueError):
            cache.incr("never-set")  # the same contract as RedisCache's incr
    outage = [r for r in caplog.records if "is unreachable" in r.getMessage()]
    assert len(outage) == 1 and outage[0].exc_info is None
    assert "throttles and rate limits count per web process" in outage[0].getMessage()


def test_redis_is_asked_again_and_the_return_is_logged(caplog, monkeypatch):
    from tests.service.live import require_redis
    from tests.workers import redis_db, redis_url

    require_redis()
    from registry_site import cache as module

    monkeypatch.setattr(module, "OUTAGE", module._Outage())
    down = module.DegradingRedisCache(f"redis://127.0.0.1:{free_port()}/0", {})
    up_url = redis_url(redis_db(14))  # this xdist worker's database (tests/workers.py)
    up = module.DegradingRedisCache(up_url, {})
    with caplog.at_level(logging.WARNING, logger="registry_site.cache"):
        assert down.get("x") is None
        assert module.OUTAGE.skipping()
        module.OUTAGE.down_until = 0.0
        up.set("h22b-probe", 5, 10)
        assert up.get("h22b-probe") == 5
    assert [r.getMessage().split(" (")[0].split(" after")[0] for r in caplog.records] == [
        f"the cache at {down._servers[0].split('@')[-1]} is unreachable",
        f"the cache at {up_url} answers again",
    ]
