"""Patterns for database-backed Celery jobs, shared by every task that owns a row.

A job's row in the database is the truth; the broker message is only a nudge.
So (docs/service.md, "Jobs"):

- **claim** a row with one conditional UPDATE whose row count says who won, and
  record the claiming task id: a redelivered message (same id) takes its own
  row back at once, another message finds it busy;
- **count attempts in the row** (`take_attempt`), never in the message: a job
  whose worker dies every time (out of memory, a crash in C) ends with a clear
  code when its attempts are used up instead of being redelivered forever
  (Celery warns that `reject_on_worker_lost` can loop);
- **heartbeat** while working (`heartbeat`), so a reaper can tell a dead
  worker's job (silent for `timeout`) from a slow one in seconds, not after
  the whole task time limit;
- **infrastructure errors are retried, not verdicts** (`is_infrastructure_error`):
  a full disk, a locked SQLite database or a dropped connection says nothing
  about the input; `retry_countdown` spaces the retries.
"""

from __future__ import annotations

import errno
import logging
import random
import threading
from contextlib import contextmanager
from datetime import datetime, timedelta

from django.db import DatabaseError, InterfaceError, OperationalError, close_old_connections, connection
from django.db.models import F, Q
from django.utils import timezone

from benchpack.bundles.archives import is_machine_error

log = logging.getLogger(__name__)

def is_transient_database_error(exc: BaseException) -> bool:
    """A locked/busy SQLite file, a PostgreSQL deadlock or serialization failure, a dropped connection."""
    if isinstance(exc, InterfaceError):
        return True
    if not isinstance(exc, (OperationalError, DatabaseError)):
        return False
    text = str(exc).lower()
    return any(word in text for word in ("locked", "busy", "deadlock", "could not serialize", "connection", "server closed"))


def is_infrastructure_error(exc: BaseException) -> bool:
    """Disk full, out of memory, I/O errors (benchpack.bundles.archives.is_machine_error), or a transient database error."""
    return is_machine_error(exc) or is_transient_database_error(exc)


def is_out_of_space(exc: BaseException) -> bool:
    """A full disk or quota, from the filesystem or from SQLite ("database or disk is full")."""
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    return isinstance(exc, (OperationalError, DatabaseError)) and "disk is full" in str(exc).lower()


def describe_error(exc: BaseException) -> str:
    """A short, value-free description for events and reports ("disk full (ENOSPC)")."""
    if isinstance(exc, OSError) and exc.errno:
        name = errno.errorcode.get(exc.errno, str(exc.errno))
        return f"{'disk full' if exc.errno in (errno.ENOSPC, errno.EDQUOT) else 'I/O error'} ({name})"
    if isinstance(exc, MemoryError):
        return "out of memory"
    if is_transient_database_error(exc):
        return "database busy or unreachable"
    return type(exc).__name__


def retry_countdown(attempt: int, base_s: float = 5.0, cap_s: float = 300.0) -> float:
    """Exponential backoff with jitter: ~5 s, 10 s, 20 s … up to cap_s."""
    delay = min(cap_s, base_s * (2 ** max(0, attempt - 1)))
    return delay * random.uniform(0.8, 1.2)


def stale_before(timeout_s: float, now: datetime | None = None) -> datetime:
    return (now or timezone.now()) - timedelta(seconds=timeout_s)


def is_stale(field: str, timeout_s: float) -> Q:
    """Rows whose heartbeat `field` is older than `timeout_s` (or was never written)."""
    return Q(**{f"{field}__lt": stale_before(timeout_s)}) | Q(**{f"{field}__isnull": True})


def take_attempt(queryset, field: str, cap: int) -> bool:
    """Add one to the row's attempt counter if it is below `cap`, atomically. False: used up.

    `queryset` selects the one row (and any state condition the caller needs).
    """
    return queryset.filter(**{f"{field}__lt": cap}).update(**{field: F(field) + 1}) == 1


@contextmanager
def heartbeat(queryset, field: str = "heartbeat_at", every_s: float = 5.0):
    """Write `field = now()` on the rows of `queryset` every `every_s` while the block runs.

    The writes come from a background thread with its own database connection
    (closed when the block ends). The queryset should carry the claim's
    condition (state, task id), so a job that lost its row stops touching it.
    A failed write is logged and tried again next beat: a busy database must
    not kill the job it reports on.
    """
    stop = threading.Event()

    def beat():
        try:
            while not stop.wait(every_s):
                try:
                    queryset.update(**{field: timezone.now()})
                except Exception:  # noqa: BLE001 - keep beating; the reaper judges silence
                    log.warning("heartbeat write failed; trying again in %.0f s", every_s, exc_info=True)
                    close_old_connections()
        finally:
            connection.close()

    thread = threading.Thread(target=beat, name="job-heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=every_s + 30)
