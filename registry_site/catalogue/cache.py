"""Cached public responses, keyed by the catalogue's generation.

Rendering a leaderboard (50 rows x 30 columns through the template engine)
costs tens of milliseconds; the same board is asked for again and again
between two approvals. `PublicResponseCacheMiddleware` keeps anonymous GET
responses of the public catalogue pages and API in a per-process LRU, keyed
by (generation, host, scheme, path + query, Accept). The generation is one
row (`CatalogueGeneration`) bumped inside every transaction that changes
what the public side shows (`bump`, called by
`registry_site.catalogue.leaderboard.refresh` / `rebuild_all`, which every
publish, withdrawal, unpublish, flag and reproduction verdict goes through).
On SQLite each request reads it; on PostgreSQL each web process follows it
by LISTEN/NOTIFY (registry_site/catalogue/generation.py), so a hit runs no
SQL, and a change is seen within CATALOGUE_GENERATION_MAX_STALE_MS of its
commit at worst (milliseconds in the steady state), by the committing
process at once. tests/service/catalogue/test_response_cache.py and
test_generation_listener.py check it.

Not cached: anything but GET; requests with a session or messages cookie
(a logged-in user's pages carry their own buttons), an Authorization header
(API tokens) or conditional headers (the view answers 304 itself); responses
other than 200, streaming ones, ones that set a cookie (a CSRF token in a
form) or say private / no-store; bodies over MAX_ENTRY_BYTES. A hit on an API
path still passes the anonymous throttle, as the view would, and is counted:
before it is answered, in a Redis round trip shared with the process's other
requests counting at that moment (registry_site/catalogue/api/throttles.py,
SharedRoundTrips), or later while the client is far below a high limit
(DeferredCounts).

Anything that changes public data must do so through `leaderboard.refresh`
(or call `bump()` in its transaction); a direct ORM update would be served
stale until the next bump. Setting CATALOGUE_RESPONSE_CACHE (env, default on;
off in the unit-test settings, which edit rows directly) turns it off.
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict

from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.db import connection
from django.http import HttpResponse

# The generation keys every entry; how a request learns it (a LISTEN/NOTIFY listener on PostgreSQL, the row
# otherwise) is generation.py's. bump is re-exported: every writer calls `cache.bump()`.
from registry_site.catalogue.generation import bump, current_generation  # noqa: F401

CACHED_PREFIXES = (
    "/leaderboards/", "/compare/", "/timelines/", "/models/", "/runtimes/", "/hardware/", "/runs/",
    "/api/v1/leaderboards/", "/api/v1/compare/", "/api/v1/timelines/", "/api/v1/runs/", "/api/v1/cases/",
    "/api/v1/systems/", "/api/v1/models/", "/api/v1/runtimes/", "/api/v1/hardware-classes/",
    # The answer is a function of the leaderboard rows alone, like a board (issue 34 item 4: uncached, each
    # question ranked every whole-pack row of its packs in Python on every request).
    "/answer/", "/api/v1/answer/",
)
MAX_ENTRY_BYTES = 4 << 20  # a timeline of a few thousand points is ~1 MB of JSON
MAX_TOTAL_BYTES = 128 << 20  # per web process
_BYPASS_HEADERS = ("HTTP_AUTHORIZATION", "HTTP_IF_NONE_MATCH", "HTTP_IF_MODIFIED_SINCE")


class ResponseLRU:
    """Bounded by total body bytes; thread-safe (granian runs blocking threads)."""

    def __init__(self, max_bytes: int = MAX_TOTAL_BYTES):
        self.max_bytes = max_bytes
        self.bytes = 0
        self.entries: OrderedDict = OrderedDict()
        self.lock = threading.Lock()

    def get(self, key):
        with self.lock:
            found = self.entries.get(key)
            if found is not None:
                self.entries.move_to_end(key)
            return found

    def put(self, key, entry, size: int) -> None:
        with self.lock:
            if key in self.entries:
                return
            self.entries[key] = (entry, size)
            self.bytes += size
            while self.bytes > self.max_bytes and self.entries:
                _, (_, dropped) = self.entries.popitem(last=False)
                self.bytes -= dropped

    def clear(self) -> None:
        with self.lock:
            self.entries.clear()
            self.bytes = 0


RESPONSES = ResponseLRU()


class SingleFlight:
    """One render per cache key at a time in a process (issue 34 item 4). Without it, a board that was not
    cached yet was rendered by every request that asked for it while the first render ran: at 1M case rows
    on PostgreSQL, 16 clients over 48 run lists rendered the same slow lists side by side, held every pooled
    connection, and the cached answers behind them waited for one (p50 0.6 s)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.running: dict = {}

    def claim(self, key) -> threading.Event | None:
        """None: the caller renders and must `release(key)`; else the event of the render already running."""
        with self.lock:
            running = self.running.get(key)
            if running is None:
                self.running[key] = threading.Event()
            return running

    def release(self, key) -> None:
        with self.lock:
            done = self.running.pop(key, None)
        if done is not None:
            done.set()


RENDERING = SingleFlight()
WAIT_FOR_RENDER_S = 30  # then render itself: a render that has not finished by then is not worth waiting for


def _release_pooled_connection() -> None:
    """Give the pooled connection back once the generation is read (PostgreSQL with DATABASE_POOL): a hit needs
    nothing more from the database, and a waiter must not hold a connection the render it waits for needs.
    Without a pool, closing would reopen the connection on the next request (SQLite's reuse is the point)."""
    if connection.settings_dict.get("OPTIONS", {}).get("pool") and connection.connection is not None \
            and not connection.in_atomic_block:
        connection.close()


def _cacheable_request(request) -> bool:
    if not settings.CATALOGUE_RESPONSE_CACHE:
        return False
    if request.method != "GET" or not request.path.startswith(CACHED_PREFIXES):
        return False
    if settings.SESSION_COOKIE_NAME in request.COOKIES or "messages" in request.COOKIES:
        return False
    return not any(header in request.META for header in _BYPASS_HEADERS)


def _cacheable_response(response) -> bool:
    if response.status_code != 200 or response.streaming or response.cookies:
        return False
    control = response.get("Cache-Control", "").lower()
    return "private" not in control and "no-store" not in control and len(response.content) <= MAX_ENTRY_BYTES


@functools.lru_cache(maxsize=4096)
def _view_class(path_info: str):
    """The class-based view a path resolves to (None: none). Memoized: the URLconf does not change while
    a process runs, and resolving walks every pattern, a third of a cached API answer's cost."""
    from django.urls import Resolver404, resolve

    try:
        return getattr(resolve(path_info).func, "view_class", None)
    except Resolver404:
        return None


def _throttled(request) -> bool:
    """The throttles of the DRF view this URL resolves to, for a hit that never reaches that view."""
    view_class = _view_class(request.path_info)
    if view_class is None:
        return False
    view = view_class()
    throttles = [throttle() for throttle in getattr(view, "throttle_classes", ())]
    return not all(getattr(throttle, "allow_cached_request", throttle.allow_request)(request, view)
                   for throttle in throttles)


class PublicResponseCacheMiddleware:
    """Before the session, CSRF and authentication middleware, so that a hit skips them (a request that
    could be anyone's but an anonymous visitor's never gets here: see _cacheable_request). On a miss
    the response is kept as those middleware left it, their headers included."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if not _cacheable_request(request):
            return self.get_response(request)
        generation = current_generation()
        _release_pooled_connection()
        key = (generation, request.get_host(), request.scheme, request.get_full_path(),
               request.META.get("HTTP_ACCEPT", ""))
        found = RESPONSES.get(key) if generation is not None else None
        if found is None and generation is not None:
            running = RENDERING.claim(key)
            if running is not None:  # another thread renders this very response: wait for it, then serve it
                running.wait(WAIT_FOR_RENDER_S)
                found = RESPONSES.get(key)
            else:
                try:
                    return self._render(request, key)
                finally:
                    RENDERING.release(key)
        if found is not None and request.path.startswith("/api/"):
            if not hasattr(request, "user"):
                request.user = AnonymousUser()  # no session or token (checked above): what DRF would see
            if _throttled(request):
                found = None  # the view answers, with its own 429
        if found is not None:
            status, headers, body = found[0]
            response = HttpResponse(body, status=status)
            for name, value in headers:
                response[name] = value
            response["X-Catalogue-Cache"] = "hit"
            return response
        return self._render(request, key if generation is not None else None)

    def _render(self, request, key):
        response = self.get_response(request)
        if key is not None and _cacheable_response(response):
            body = response.content
            RESPONSES.put(key, (response.status_code, list(response.items()), body), len(body))
        return response
