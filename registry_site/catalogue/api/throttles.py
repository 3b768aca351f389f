"""API throttles: one counter per client and window, in the shared cache.

DRF's own throttles keep a sliding window: the list of every request's
timestamp within the period, read, unpickled, appended to, pickled and
written back on each request. At 120/minute that list is short; at the rates
an operator sets for a busy mirror or a benchmark (100,000,000/minute in
bench/catalogue_load.py) it grows to every request of the last minute:
tens of thousands of floats moved through the cache per request. Here each
client has one integer per fixed window (`cache.incr`, atomic in Redis), so
a request costs the same at any rate. The price is the usual fixed-window
one: a client may spend one window's allowance at its end and the next at
the start of the next.

With Redis as the cache (CACHE_URL, as deployed), the count is one round
trip: a Lua script that increments and, on a window's first request, sets
the expiry, sent by EVALSHA over a redis-py connection of the calling
thread's own (`CountScript`). Django's cache API would take two (EXISTS then
INCR, or EXISTS then SET NX) and build a new redis-py client object for
each, about 0.3 ms of CPU apiece; a redis-py client's script call costs
~65 µs of CPU, most of it the pool's check-out (a poll() for stray replies),
retry and metrics wrappers: on a connection no other thread can touch, send
and read are ~23 µs. The key is the one Django's cache would use
(`cache.make_key`), so either path counts in the same place.

Counts that a process's threads ask for at the same time share round trips
(`SharedRoundTrips`): while one thread waits for Redis, the others queue,
and the next round trip carries the whole queue in one script call. Each
request still waits for its own total, so the bound is as exact as one call
per request; Redis runs one script instead of many, and the web process
makes one send and one read instead of one per request. With 8 threads
counting at once a round trip carried 4.5 counts on average, and a count
cost 39–48 µs of CPU where it cost 100–125 µs (docs/leaderboards.md,
"The throttle's round trip, shared").

An answer from the response cache (registry_site/catalogue/cache.py) costs
about what the health check costs, and a round trip to Redis under load
cost it more than the answer itself (a thread waiting for Redis, then for
the GIL). So a cached answer to a client far below a high limit (at least
DEFER_MIN_REQUESTS a window) is counted later: `DeferredCounts` adds it to a per-process tally that a background
thread writes to Redis every FLUSH_INTERVAL_S, in one script call for all
keys, learning every key's total as it does. Once a client's known total
plus what this process has not written yet reaches half its allowance,
every request of it is counted synchronously again, its unwritten tally
with it. Every request is counted; the limit holds within one process
exactly, and across the web processes it can be overshot only by the
requests other processes have counted but not yet written: fewer than half
the allowance per process, and no more than that client's rate times
FLUSH_INTERVAL_S. Rendered answers are always counted synchronously.

While Redis is unreachable (registry_site/cache.py) every count goes to a
per-process fallback cache: the limit holds per web process, the outage is
logged once a minute per process, no request fails for it, and the deferred
tallies wait for Redis to come back.

Anonymous clients count per address (AnonRateThrottle's scope and key
prefix, `throttle_anon_<address>_<window>`), signed-in clients per user.
DRF's UserRateThrottle also counts anonymous clients, by address; here an
anonymous request is counted once, by the anonymous throttle only.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import time

from django.core.cache import caches
from django.core.cache.backends.redis import RedisCache
import redis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import NoScriptError, RedisError
from rest_framework.settings import api_settings
from rest_framework.throttling import AnonRateThrottle, UserRateThrottle

from registry_site.cache import FALLBACK, OUTAGE, server_name, server_url

# KEYS: window counters; ARGV[2i - 1] what to add to KEYS[i], ARGV[2i] its lifetime in seconds (set by
# whoever creates the counter). Returns every counter's new total.
_COUNT_SCRIPT = """
local totals = {}
for i, key in ipairs(KEYS) do
  local add = tonumber(ARGV[2 * i - 1])
  local total = redis.call('INCRBY', key, add)
  if total == add then redis.call('EXPIRE', key, ARGV[2 * i]) end
  totals[i] = total
end
return totals
"""
FLUSH_INTERVAL_S = 0.05
# Deferred counting lets each web process admit up to half a client's allowance on what it last heard from
# Redis; at 120/minute over two fresh processes that let 467 requests through in 20 s where the fixed window
# allows 240. Below this many requests per window every answer is counted on the spot, so the limit holds
# exactly across processes; above it (a mirror's or a benchmark's rate) the documented overshoot is a small
# share of the allowance and the round trip saved matters.
DEFER_MIN_REQUESTS = 6000
logger = logging.getLogger(__name__)

class CountScript:
    """The count script over a Redis connection of the calling thread's own, one per server and thread.

    A connection used by one thread only needs none of a pool's care: no lock, and no poll() on
    check-out for a reply left over by an interrupted command, because any error here closes the
    connection before another command could read such a reply. A thread's connections close when
    the thread ends (granian retires idle blocking threads), so there are at most as many as threads
    that counted, as with redis-py's own pool."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.sha = hashlib.sha1(source.encode()).hexdigest()
        self.local = threading.local()
        self.pools: dict[str, redis.ConnectionPool] = {}  # server URL -> its parsed settings (no connection)

    def reset(self) -> None:
        """Forget every server's settings and this thread's connections (tests)."""
        self.__init__(self.source)

    def run(self, server: str, keys: list[str], args: list[int]) -> list[int]:
        connections = self.local.__dict__.setdefault("connections", {})
        connection = connections.get(server)
        if connection is None:
            pool = self.pools.get(server)
            if pool is None:  # redis-py parses the URL (redis://, rediss://, unix://), as for a client
                pool = self.pools[server] = redis.ConnectionPool.from_url(
                    server, socket_connect_timeout=1, socket_timeout=1)
            connection = connections[server] = pool.connection_class(**pool.connection_kwargs)
        try:
            return self._send(connection, keys, args)
        except RedisConnectionError:
            # A kept connection the server has since closed (a restart, a client timeout) fails on first
            # use: once more on a new one, as redis-py's client retries. If the lost attempt had counted,
            # the client is counted twice: the bound errs on the safe side.
            return self._send(connection, keys, args)

    def _send(self, connection, keys: list[str], args: list[int]) -> list[int]:
        try:
            connection.send_command("EVALSHA", self.sha, len(keys), *keys, *args)
            try:
                return connection.read_response()
            except NoScriptError:  # a restarted or flushed server: load the script, then run it
                connection.send_command("SCRIPT", "LOAD", self.source)
                connection.read_response()
                connection.send_command("EVALSHA", self.sha, len(keys), *keys, *args)
                return connection.read_response()
        except BaseException:
            connection.disconnect()  # a reply may still be on its way: never read it as the next one's
            raise


class _PendingCount:
    __slots__ = ("key", "requests", "lifetime_s", "total", "error", "lead", "wake")

    def __init__(self, key: str, requests: int, lifetime_s: int) -> None:
        self.key, self.requests, self.lifetime_s = key, requests, lifetime_s
        self.total: int | None = None
        self.error: BaseException | None = None
        self.lead = False  # woken to send the next round trip, not with a total
        self.wake = threading.Lock()
        self.wake.acquire()  # released by whoever sends this count


class SharedRoundTrips:
    """Counts asked for while another thread of this process waits for Redis go in one round trip.

    The first thread to count sends its own; any thread that counts meanwhile queues its key and
    waits. When the reply comes, the sender hands every waiter its total, and the first thread still
    queued sends all of the queue in one script call (the script counts any number of keys, each
    atomically and in order). Every request still waits for its own total from Redis, so the bound
    stays exact; what is shared is the round trip: one send, one read and one script run in Redis
    for as many requests as arrived during the last one, where each thread used to block on its own
    socket. Under a web worker's load (8 requests at once) a round trip carried 4.5 counts, and Redis's
    CPU per cached answer fell from 51 to 28-37 µs."""

    def __init__(self, script: CountScript) -> None:
        self.script = script
        self.lock = threading.Lock()
        self.queues: dict[str, list[_PendingCount]] = {}  # server URL -> counts not yet sent
        self.sending: set[str] = set()  # servers a thread of this process is sending to

    def reset(self) -> None:
        """Forget every queue and sender (a forked child: the threads that held them are not in it)."""
        self.__init__(self.script)

    def count(self, server: str, key: str, requests: int, lifetime_s: int) -> int:
        mine = _PendingCount(key, requests, lifetime_s)
        with self.lock:
            self.queues.setdefault(server, []).append(mine)
            queued_behind = server in self.sending
            self.sending.add(server)
        if queued_behind:
            mine.wake.acquire()
            if not mine.lead:
                if mine.error is not None:
                    raise RedisError(f"the shared round trip failed: {mine.error}") from mine.error
                return mine.total
        with self.lock:  # this thread sends: everything queued, its own count included
            batch, self.queues[server] = self.queues[server], []
        try:
            totals = self.script.run(server, [pending.key for pending in batch],
                                     [value for pending in batch for value in (pending.requests, pending.lifetime_s)])
            for pending, total in zip(batch, totals):
                pending.total = int(total)
        except BaseException as exc:  # noqa: BLE001 - every waiter learns it; this thread re-raises it
            for pending in batch:
                pending.error = exc
        with self.lock:
            queue = self.queues[server]
            successor = queue[0] if queue else None
            if successor is None:
                self.sending.discard(server)
            else:
                successor.lead = True
        for pending in batch:
            if pending is not mine:
                pending.wake.release()
        if successor is not None:
            successor.wake.release()
        if mine.error is not None:
            raise mine.error
        return mine.total


COUNT_SCRIPT = CountScript(_COUNT_SCRIPT)
ROUND_TRIPS = SharedRoundTrips(COUNT_SCRIPT)


def _forget_after_fork() -> None:
    """A forked child must not write to its parent's Redis sockets (replies would cross between the
    processes), nor wait on a round trip that a parent thread had under way when it forked."""
    COUNT_SCRIPT.reset()
    ROUND_TRIPS.reset()


os.register_at_fork(after_in_child=_forget_after_fork)


def count_request(key: str, lifetime_s: int, requests: int = 1) -> int:
    """The total of window `key` after adding `requests` (this one, and any counted but not yet written),
    atomically, in the shared (default) cache."""
    backend = caches["default"]
    if isinstance(backend, RedisCache):
        if OUTAGE.skipping():
            return count_request_in(FALLBACK, key, lifetime_s, requests)
        try:
            # make_key, not make_and_validate_key: validation only warns about memcached's key rules
            # (length, spaces), which Redis does not have, and an address header can break them.
            total = ROUND_TRIPS.count(server_url(backend), backend.make_key(key), requests, lifetime_s)
        except RedisError as exc:  # fail open to a per-process count, never a 500
            OUTAGE.failed(server_name(backend), exc)
            return count_request_in(FALLBACK, key, lifetime_s, requests)
        OUTAGE.recovered(server_name(backend))
        return total
    return count_request_in(backend, key, lifetime_s, requests)


def count_request_in(backend, key: str, lifetime_s: int, requests: int = 1) -> int:
    """count_request through Django's cache API (the database cache; the fallback while Redis is away)."""
    try:
        return backend.incr(key, requests)
    except ValueError:  # the first request of this window (or the entry expired)
        if backend.add(key, requests, lifetime_s):
            return requests
        return backend.incr(key, requests)


class DeferredCounts:
    """Per-process tally of cached answers not yet written to Redis, and the totals Redis last gave back."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.unwritten: dict[str, list] = {}  # key -> [requests, lifetime_s, window_ends]
        self.totals: dict[str, tuple[int, float]] = {}  # key -> (total, window_ends)
        self.background = True  # False: only explicit flush() calls write (tests)
        self.flusher: threading.Thread | None = None
        self._stop = threading.Event()

    def reset(self) -> None:
        """Stop the background writer and forget everything (tests)."""
        self._stop.set()
        if self.flusher is not None:
            self.flusher.join(timeout=5)
        self.__init__()

    def admit(self, key: str, limit: int, lifetime_s: int, window_ends: float) -> bool:
        """Whether this request is within `limit`; counted either way."""
        if not isinstance(caches["default"], RedisCache):
            return count_request(key, lifetime_s) <= limit
        with self.lock:
            known = self.totals.get(key, (0, 0.0))[0]
            tally = self.unwritten.get(key)
            unwritten = tally[0] if tally else 0
            if 2 * (known + unwritten + 1) <= limit:
                if tally:
                    tally[0] += 1
                else:
                    self.unwritten[key] = [1, lifetime_s, window_ends]
                self._start_flusher()
                return True
            self.unwritten.pop(key, None)  # goes with this request's synchronous count
        total = count_request(key, lifetime_s, unwritten + 1)
        with self.lock:
            self.totals[key] = (total, window_ends)
        return total <= limit

    def flush(self) -> None:
        """Write every unwritten tally in one script call; keep the totals it returns."""
        now = time.time()
        with self.lock:
            batch, self.unwritten = self.unwritten, {}
            self.totals = {key: known for key, known in self.totals.items() if known[1] > now}
        if not batch:
            return
        if OUTAGE.skipping():  # Redis is away: the tallies wait, the requests were counted per process
            with self.lock:
                self._keep(batch)
            return
        backend = caches["default"]
        keys = list(batch)
        try:
            totals = COUNT_SCRIPT.run(server_url(backend), [backend.make_key(key) for key in keys],
                                      [value for key in keys for value in batch[key][:2]])
        except Exception:
            with self.lock:  # Redis unreachable: the tallies wait for the next flush
                self._keep(batch)
            raise
        OUTAGE.recovered(server_name(backend))
        with self.lock:
            for key, total in zip(keys, totals):
                self.totals[key] = (int(total), batch[key][2])

    def _keep(self, batch: dict) -> None:
        """Put unwritten tallies back (caller holds the lock); those of windows already over are dropped."""
        now = time.time()
        for key, (requests, lifetime_s, window_ends) in batch.items():
            if window_ends > now:
                tally = self.unwritten.setdefault(key, [0, lifetime_s, window_ends])
                tally[0] += requests

    def _start_flusher(self) -> None:
        if self.background and (self.flusher is None or not self.flusher.is_alive()):
            self.flusher = threading.Thread(target=self._flush_forever, args=(self._stop,), name="throttle-counts",
                                            daemon=True)
            self.flusher.start()

    def _flush_forever(self, stop: threading.Event) -> None:
        while not stop.wait(FLUSH_INTERVAL_S):
            try:
                self.flush()
            except RedisError as exc:  # logged once a minute per process (OUTAGE), never per attempt
                OUTAGE.failed(server_name(caches["default"]), exc)
            except Exception:  # noqa: BLE001 - logged; the tallies wait for the next flush
                logger.exception("could not write throttle counts to the cache")
                stop.wait(1.0)  # an unexpected error: not 20 tracebacks a second


DEFERRED = DeferredCounts()


class FixedWindowMixin:
    def _window_key(self, request, view) -> str | None:
        """This client's counter for the current window (None: not counted by this throttle)."""
        if self.rate is None:
            return None
        ident_key = self.get_cache_key(request, view)
        if ident_key is None:
            return None
        self.now = self.timer()
        window = int(self.now // self.duration)
        self.window_ends = (window + 1) * self.duration
        return f"{ident_key}_{window}"

    def get_ident(self, request):
        """DRF's get_ident, reading the header from META: DRF's `request.headers` builds a dict of every
        header, a sixth of a cached answer's throttle check."""
        forwarded = request.META.get("HTTP_X_FORWARDED_FOR")
        remote_addr = request.META.get("REMOTE_ADDR")
        num_proxies = api_settings.NUM_PROXIES
        if num_proxies is not None:
            if num_proxies == 0 or forwarded is None:
                return remote_addr
            addresses = forwarded.split(",")
            return addresses[-min(num_proxies, len(addresses))].strip()
        return "".join(forwarded.split()) if forwarded else remote_addr

    def allow_request(self, request, view):
        key = self._window_key(request, view)
        return key is None or count_request(key, self.duration + 1) <= self.num_requests

    def allow_cached_request(self, request, view) -> bool:
        """allow_request for an answer from the response cache: counted later while the client is far
        below a limit of at least DEFER_MIN_REQUESTS (DeferredCounts); under it, counted now."""
        if self.rate is not None and self.num_requests < DEFER_MIN_REQUESTS:
            return self.allow_request(request, view)
        key = self._window_key(request, view)
        return key is None or DEFERRED.admit(key, self.num_requests, self.duration + 1, self.window_ends)

    def wait(self):
        return max(0.0, self.window_ends - self.now)

    def timer(self):
        return time.time()


class AnonymousRateThrottle(FixedWindowMixin, AnonRateThrottle):
    pass


class SignedInUserRateThrottle(FixedWindowMixin, UserRateThrottle):
    def get_cache_key(self, request, view):
        if not (request.user and request.user.is_authenticated):
            return None  # counted by AnonymousRateThrottle
        return super().get_cache_key(request, view)
