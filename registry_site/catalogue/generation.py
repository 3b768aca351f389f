"""The catalogue generation, and how a web process learns it without asking the database each request.

The generation is one row (`CatalogueGeneration`) bumped inside every transaction that changes what the
public side shows (`bump`); cached public responses and ETags are keyed by it
(registry_site/catalogue/cache.py, api/conditional.py). Reading it on every request cost a cached hit one
SQL round trip through the connection pool — on PostgreSQL under 16 connections on 2 cores, the gap
between a cached answer and the trivial view (issue 34 item 4).

On PostgreSQL, `bump` also sends `NOTIFY` in its transaction (delivered at commit, never on rollback), and
each web process keeps one `GenerationListener`: a thread with its own connection (outside the pool) that
`LISTEN`s, reads the row once on connecting, again after every notification and every `heartbeat_s` when
none comes. A request uses the listener's value while the listener's last completed read *started* less
than `max_stale_s` ago (CATALOGUE_GENERATION_MAX_STALE_MS), and reads the row itself otherwise (startup,
a lost connection, a listener starved of CPU). That is the staleness bound: every commit before the
listener's last read is in its value, so a change that committed more than `max_stale_s` before a request
is always seen by it; in the steady state it is seen as soon as the notification arrives (milliseconds,
docs/leaderboards.md "Cached hits without a database round trip"). The process that commits a bump uses
the new value from its next request (`transaction.on_commit`).

SQLite has no notifications: every request reads the row, a read from a file in the page cache.
CATALOGUE_GENERATION_LISTEN=false turns the listener off (every request reads the row, as before);
the test settings do, because tests change rows in transactions that never commit.
"""

from __future__ import annotations

import functools
import logging
import os
import threading
import time

from django.conf import settings
from django.db import connection, transaction

from registry_site.catalogue.models import CatalogueGeneration

CHANNEL = "benchpack_catalogue_generation"
RECONNECT_S = 1.0  # after a failed connection or a lost one; requests read the row meanwhile
_NOT_FRESH = object()
# The listener's own read: a plain psycopg connection (PostgreSQL only), not through Django's backend.
_SQL_READ_PG = f'SELECT value FROM "{CatalogueGeneration._meta.db_table}" WHERE id = 1'
logger = logging.getLogger(__name__)


@functools.cache
def _statements() -> dict[str, str]:
    """The two statements, built once (quoting the table name through the backend)."""
    table = connection.ops.quote_name(CatalogueGeneration._meta.db_table)
    return {"read": f"SELECT value FROM {table} WHERE id = 1",
            # one statement whether or not the row exists: processes refreshing at once into a database
            # without it (a flushed test database; migration 0004 makes it) each tried to create it and all
            # but one failed on its primary key
            "bump": (f"INSERT INTO {table} (id, value) VALUES (1, 2) "
                     f"ON CONFLICT (id) DO UPDATE SET value = {table}.value + 1 RETURNING value")}


def _sql(name: str) -> str:
    return _statements()[name]


def bump() -> None:
    """Call inside the transaction that changes public data (the row lock orders concurrent writers)."""
    with connection.cursor() as cursor:
        cursor.execute(_sql("bump"))
        value = cursor.fetchone()[0]
        if connection.vendor == "postgresql":
            cursor.execute(f"NOTIFY {CHANNEL}")  # sent when (and only if) this transaction commits
    transaction.on_commit(lambda: _learned(value))


def read_generation() -> int | None:
    """The committed generation, read through this thread's (pooled) connection."""
    with connection.cursor() as cursor:
        cursor.execute(_sql("read"))
        row = cursor.fetchone()
    return row[0] if row else None


def current_generation() -> int | None:
    """The generation for this request: the listener's while it is fresh (no SQL), else the row's."""
    listener = _listener()
    if listener is not None:
        value = listener.fresh_value()
        if value is not _NOT_FRESH:
            return value
    return read_generation()


class GenerationListener:
    """One thread and one connection per web process, following the generation by LISTEN/NOTIFY."""

    def __init__(self, connect_params: dict, max_stale_s: float):
        self.connect_params = connect_params
        self.max_stale_s = max_stale_s
        # A quarter of the bound: a heartbeat read can be late three times (or the thread wait that long for
        # the GIL under load) before requests stop trusting the value and read the row themselves.
        self.heartbeat_s = max_stale_s / 4
        self.state: tuple = (None, float("-inf"))  # (value, monotonic start of the read it reflects); one
        # tuple so a request never pairs one read's value with another's time
        self.connected = threading.Event()  # set while LISTENing (tests, and the log on reconnecting)
        self.failures = 0
        self.backend_pid: int | None = None  # the server process of the LISTEN connection (tests, pg_stat_activity)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="catalogue-generation", daemon=True)

    def start(self) -> GenerationListener:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def fresh_value(self):
        value, read_at = self.state
        return value if time.monotonic() - read_at <= self.max_stale_s else _NOT_FRESH

    def learned(self, value: int) -> None:
        """A bump this process committed: newer than the last read, so use it now (the notification follows)."""
        current, read_at = self.state
        if current is not None and value > current:
            self.state = (value, read_at)

    def _run(self) -> None:
        import psycopg

        while not self._stop.is_set():
            try:
                with psycopg.connect(**self.connect_params, autocommit=True) as conn:
                    self.backend_pid = conn.info.backend_pid
                    conn.execute(f"LISTEN {CHANNEL}")  # before the first read: no bump falls between them
                    self._read(conn)
                    if self.failures:
                        logger.warning("catalogue generation listener connected again after %d failed "
                                       "attempts; cached hits skip the database again", self.failures)
                    self.failures = 0
                    self.connected.set()
                    while not self._stop.is_set():
                        # Whatever ends the wait — a notification, or a quiet heartbeat — the row is read:
                        # the read, not the notification's payload, is what the value reflects.
                        for _ in conn.notifies(timeout=self.heartbeat_s, stop_after=1):
                            pass
                        self._read(conn)
            except Exception as exc:  # noqa: BLE001 - any failure: requests read the row until we are back
                self.connected.clear()
                self.state = (None, float("-inf"))
                if self.failures == 0:
                    logger.warning("catalogue generation listener lost its connection (%s: %s); every "
                                   "request reads the generation from the database until it is back",
                                   type(exc).__name__, exc)
                self.failures += 1
                self._stop.wait(RECONNECT_S)
        self.connected.clear()

    def _read(self, conn) -> None:
        started = time.monotonic()
        row = conn.execute(_SQL_READ_PG).fetchone()
        self.state = (row[0] if row else None, started)


_LISTENER: GenerationListener | None = None
_LISTENER_LOCK = threading.Lock()
_LISTENER_OFF = object()  # decided: this process has no listener (SQLite, or turned off)


def _listener() -> GenerationListener | None:
    """This process's listener, started on first use (in the web process, after any fork)."""
    global _LISTENER
    listener = _LISTENER
    if listener is _LISTENER_OFF:
        return None
    if listener is not None:
        return listener
    with _LISTENER_LOCK:
        if _LISTENER is None:
            if not settings.CATALOGUE_GENERATION_LISTEN or connection.vendor != "postgresql":
                _LISTENER = _LISTENER_OFF
            else:
                _LISTENER = GenerationListener(listener_connect_params(),
                                               settings.CATALOGUE_GENERATION_MAX_STALE_MS / 1000).start()
        return None if _LISTENER is _LISTENER_OFF else _LISTENER


def listener_connect_params() -> dict:
    """The default database's connection parameters for a plain psycopg connection of our own (not the pool's:
    a LISTEN connection is held for the life of the process)."""
    params = connection.get_connection_params()
    for django_only in ("cursor_factory", "context", "prepare_threshold"):
        params.pop(django_only, None)
    # A server that does not answer, or a connection that died silently, must not hold the listener for
    # minutes of TCP retries: requests read the row meanwhile (correct, but the point is lost), so give up
    # and reconnect after seconds (libpq's parameters; an OPTIONS entry of the same name wins).
    for name, value in (("connect_timeout", 5), ("keepalives", 1), ("keepalives_idle", 10),
                        ("keepalives_interval", 5), ("keepalives_count", 3)):
        params.setdefault(name, value)
    return params


def reset_listener() -> None:
    """Stop this process's listener and decide again on next use (tests; a forked child)."""
    global _LISTENER
    with _LISTENER_LOCK:
        listener, _LISTENER = _LISTENER, None
    if isinstance(listener, GenerationListener):
        listener.stop()


def _learned(value: int) -> None:
    listener = _LISTENER
    if isinstance(listener, GenerationListener):
        listener.learned(value)


def _forget_after_fork() -> None:
    """A forked child has no listener thread (threads do not survive fork): it starts its own on first use."""
    global _LISTENER, _LISTENER_LOCK
    _LISTENER_LOCK = threading.Lock()
    _LISTENER = None


os.register_at_fork(after_in_child=_forget_after_fork)
