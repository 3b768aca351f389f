"""The shared cache, degrading to a per-process one while Redis is away.

Every throttle and rate limit (DRF's API throttles, allauth's login limits)
counts in the default cache. Django's RedisCache lets a redis-py
ConnectionError through, so with Redis stopped every request that counts
anything answered 500. `DegradingRedisCache` catches Redis's errors and
serves that operation from a per-process LocMemCache instead: limits still
hold, but per web process (N processes let through up to N times a limit)
until Redis is back, which is the trade django-redis's IGNORE_EXCEPTIONS and
warehouse's rate limiter make too (fail open rather than refuse everyone).

After a failure Redis is not asked again for RETRY_AFTER_S, so an outage
costs one refused connection per process per interval, not one per request.
The outage is logged once per LOG_EVERY_S per process (a warning with the
error, no traceback), and once more when Redis answers again; nothing
else a request does while Redis is away is logged.

Nothing here holds data that must survive an outage: counters restart in
the fallback and go back to Redis's when it returns.
"""

from __future__ import annotations

import functools
import logging
import threading
import time

from django.core.cache.backends.locmem import LocMemCache
from django.core.cache.backends.redis import RedisCache
from redis.exceptions import RedisError

RETRY_AFTER_S = 1.0
LOG_EVERY_S = 60.0
logger = logging.getLogger(__name__)


class _Outage:
    """Per-process state (Django builds one cache object per thread; the outage is the process's)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.down_until = 0.0  # monotonic; before it, Redis is not asked
        self.since: float | None = None  # wall clock of the first failure of this outage
        self.logged_at = float("-inf")
        self.suppressed = 0

    def skipping(self) -> bool:
        return time.monotonic() < self.down_until

    def failed(self, server: str, exc: BaseException) -> None:
        now = time.monotonic()
        with self.lock:
            self.down_until = now + RETRY_AFTER_S
            if self.since is None:
                self.since = time.time()
            if now - self.logged_at < LOG_EVERY_S:
                self.suppressed += 1
                return
            self.logged_at, suppressed, self.suppressed = now, self.suppressed, 0
        logger.warning(
            "the cache at %s is unreachable (%s: %s); throttles and rate limits count per web process until "
            "it is back%s", server, type(exc).__name__, exc,
            f" ({suppressed} more failures since the last message)" if suppressed else "",
        )

    def recovered(self, server: str) -> None:
        if self.since is None:
            return
        with self.lock:
            if self.since is None:
                return
            since, self.since, self.down_until, self.logged_at, self.suppressed = (
                self.since, None, 0.0, float("-inf"), 0)
        logger.warning("the cache at %s answers again after %.0f s; limits are shared again", server,
                       time.time() - since)


OUTAGE = _Outage()
FALLBACK = LocMemCache("benchpack-redis-fallback", {"OPTIONS": {"MAX_ENTRIES": 100_000}})


def server_url(backend) -> str:
    """The URL of the server a Redis cache writes to, from the cache's settings (public configuration:
    Django's RedisCache keeps it in a private attribute). LOCATION is one URL, a comma-separated list or
    a list; the first server takes the writes, as in Django's RedisCache."""
    location = getattr(backend, "location", None)
    if location is None:
        from django.conf import settings

        location = next(c["LOCATION"] for c in settings.CACHES.values() if c["BACKEND"].endswith("RedisCache"))
    servers = location.split(",") if isinstance(location, str) else list(location)
    return servers[0].strip()


def server_name(backend) -> str:
    return server_url(backend).split("@")[-1]  # no password in the log


def _degrading(name: str):
    redis_method = getattr(RedisCache, name)
    fallback_method = getattr(LocMemCache, name)

    @functools.wraps(redis_method)
    def method(self, *args, **kwargs):
        if OUTAGE.skipping():
            return fallback_method(FALLBACK, *args, **kwargs)
        try:
            result = redis_method(self, *args, **kwargs)
        except RedisError as exc:
            OUTAGE.failed(server_name(self), exc)
            return fallback_method(FALLBACK, *args, **kwargs)
        OUTAGE.recovered(server_name(self))
        return result

    return method


class DegradingRedisCache(RedisCache):
    """RedisCache whose operations fall back to a per-process LocMemCache while Redis is unreachable."""

    def __init__(self, server, params):
        params = {**params, "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 1,
                                        **params.get("OPTIONS", {})}}
        super().__init__(server, params)
        self.location = server  # public: the throttles' own Redis client connects to the same server



for _name in ("add", "get", "set", "touch", "delete", "get_many", "has_key", "incr", "set_many", "delete_many",
              "clear"):
    setattr(DegradingRedisCache, _name, _degrading(_name))
