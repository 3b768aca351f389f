"""What a running request writes to the database, and how it is stopped.

`DatabaseProgress` is the core runner's `ProgressSink`: it stores every
measured row as it lands (rows done survive a cancel or a crash), the
executions done / total, the current case and a log tail, and it is where
the runner stops between requests when `RunWatch` says so.

`RunWatch` is a thread beside the run. It writes the heartbeat (only while
this worker still holds the claim), watches for a cancel, the request's
time limit and a lost claim, and then stops the run: at the next request
boundary, or, when the request in flight does not end within `grace_s`, by
interrupting it (SIGINT to this thread, turned into `RunInterrupted`, which
the runner treats like Ctrl-C: rows on disk kept, repo-task agent process
groups killed).

It stays out of the runner's timed windows (`benchpack.measurement.window`):
a database round trip holds the GIL for about a millisecond, and a token
arriving meanwhile would be stamped late. So it reads and writes between
requests; the runner's thread itself looks for a cancel at every request
boundary; and only a request that keeps its window open for longer than a
heartbeat interval gets a heartbeat (and a cancel check) from inside it.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections import deque

from django.db import close_old_connections, connection
from django.utils import timezone

from benchpack.measurement.window import window_open
from benchpack.run.progress import execution_label, outcome_text
from registry_site.jobs import describe_error, is_transient_database_error
from submissions.runqueue import states
from submissions.runqueue.models import RunRequest, RunRequestRow

log = logging.getLogger(__name__)

LOG_LINES = 200
PROGRESS_WRITE_EVERY_S = 0.5


class RunInterrupted(KeyboardInterrupt):
    """Stops the core runner like Ctrl-C does. A KeyboardInterrupt on purpose:
    the runner keeps the rows and kills agent process groups for it, and an
    adapter's `except Exception` cannot swallow it."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class RunLog:
    """The last lines of a run, timestamped, for the request page."""

    def __init__(self, initial: str = ""):
        self.lines: deque[str] = deque(initial.splitlines(), maxlen=LOG_LINES)

    def add(self, message: str) -> None:
        self.lines.append(f"{timezone.now():%H:%M:%S} {message[:500]}")
        log.info("%s", message)

    def text(self) -> str:
        return "\n".join(self.lines)


class RunWatch:
    def __init__(self, request_id, claim, time_limit_s: float, heartbeat_s: float, *, poll_s: float = 0.5,
                 grace_s: float = 1.0):
        self.request_id, self.claim = request_id, claim
        self.time_limit_s, self.heartbeat_s = time_limit_s, heartbeat_s
        self.poll_s, self.grace_s = poll_s, grace_s
        self.stop_reason: str | None = None
        self.stopped_at: float | None = None
        self._armed = False  # interruptions only while the runner runs (never while bundling)
        self._raised = False
        self._done = threading.Event()
        self._last_look = 0.0
        self._deferred_since: float | None = None
        self._main = threading.main_thread().ident if threading.current_thread() is threading.main_thread() else None
        self._previous_handler = None
        self._thread = threading.Thread(target=self._loop, name=f"run-watch-{request_id}", daemon=True)
        self._started = time.monotonic()

    # -- the runner's side ---------------------------------------------------
    def __enter__(self) -> RunWatch:
        if self._main is not None:
            self._previous_handler = signal.signal(signal.SIGINT, self._on_sigint)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._armed = False
        self._done.set()
        self._thread.join(timeout=10)
        if self._main is not None:
            signal.signal(signal.SIGINT, self._previous_handler or signal.SIG_DFL)

    def arm(self, armed: bool) -> None:
        self._armed = armed

    def check(self) -> None:
        """Called between requests (outside any timed window): stop here if there is a reason to."""
        if self.stop_reason is None and time.monotonic() - self._last_look >= self.poll_s:
            try:
                self._look()
            except Exception as exc:  # the watcher looks again; a busy database must not end the run
                log.warning("run request %s: cancel check failed (%s)", self.request_id, exc)
        if self.stop_reason and self._armed and not self._raised:
            self._raised = True
            raise RunInterrupted(self.stop_reason)

    def _on_sigint(self, signum, frame) -> None:
        if self._armed and not self._raised:
            self._raised = True
            raise RunInterrupted(self.stop_reason or "interrupted (SIGINT)")

    # -- the thread ----------------------------------------------------------
    def _stop(self, reason: str) -> None:
        if self.stop_reason is None:
            self.stop_reason = reason
            self.stopped_at = time.monotonic()
            log.warning("run request %s: stopping: %s", self.request_id, reason)

    def _polite(self, now: float) -> bool:
        """May the database be touched now? Not inside a timed window, unless it has been open a heartbeat long."""
        if not window_open():
            self._deferred_since = None
            return True
        if self._deferred_since is None:
            self._deferred_since = now
        if now - self._deferred_since >= self.heartbeat_s:
            self._deferred_since = now  # a long request: one look and beat per heartbeat interval
            return True
        return False

    def _loop(self) -> None:
        last_beat = 0.0
        try:
            while not self._done.wait(self.poll_s):
                now = time.monotonic()
                if self._polite(now):
                    try:
                        self._look()
                        if now - last_beat >= self.heartbeat_s:
                            self._beat()
                            last_beat = now
                    except Exception:  # a database hiccup must not kill the watcher; try again next tick
                        log.exception("run request %s: watcher tick failed", self.request_id)
                        close_old_connections()
                if now - self._started > self.time_limit_s:
                    self._stop(f"time limit of {self.time_limit_s:g} s reached")
                if (self.stop_reason and self._armed and not self._raised and self._main is not None
                        and now - self.stopped_at >= self.grace_s):
                    # The request in flight did not end in time: interrupt it.
                    signal.pthread_kill(self._main, signal.SIGINT)
        finally:
            connection.close()

    def _look(self) -> None:
        self._last_look = time.monotonic()
        row = (RunRequest.objects.filter(pk=self.request_id)
               .values("state", "claim_token", "cancel_requested_at").first())
        if row is None or row["state"] != states.RUNNING or row["claim_token"] != self.claim:
            self._stop("this worker no longer holds the request (the reaper gave it up, or it was finished elsewhere)")
        elif row["cancel_requested_at"] is not None:
            self._stop("cancelled")

    def _beat(self) -> None:
        held = RunRequest.objects.filter(pk=self.request_id, state=states.RUNNING, claim_token=self.claim).update(
            heartbeat_at=timezone.now()
        )
        if not held:
            self._stop("this worker no longer holds the request (the reaper gave it up, or it was finished elsewhere)")


class DatabaseProgress:
    """The runner's ProgressSink, writing to the request's row."""

    def __init__(self, request: RunRequest, attempt: int, watch: RunWatch, runlog: RunLog,
                 repetitions: int, warmups: int):
        self.request, self.attempt, self.watch, self.runlog = request, attempt, watch, runlog
        self.repetitions, self.warmups = repetitions, warmups
        self.total = self.done = self.rows = 0
        self.current = ""
        self._written_at = 0.0

    def _tolerant(self, write) -> None:
        """A busy database must not end a benchmark: the result directory holds every
        row anyway (that is what gets bundled); the page catches up on the next write."""
        try:
            write()
        except Exception as exc:
            if not is_transient_database_error(exc):
                raise
            log.warning("run request %s: progress not written (%s); going on", self.request.pk, describe_error(exc))
            close_old_connections()

    def _write(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._written_at < PROGRESS_WRITE_EVERY_S:
            return
        self._written_at = now
        self._tolerant(lambda: RunRequest.objects.filter(pk=self.request.pk, claim_token=self.watch.claim).update(
            progress_done=self.done, progress_total=self.total, current=self.current[:255],
            log_tail=self.runlog.text(),
        ))

    def started(self, total_executions: int) -> None:
        self.total, self.done = total_executions, 0
        self.runlog.add(f"running {total_executions} executions")
        self._write(force=True)

    def execution_started(self, case_id: str, repetition: int, warmup: bool, **lane) -> None:
        self.watch.check()
        self.current = execution_label(case_id, repetition, warmup, self.repetitions, self.warmups, **lane)
        self._write()

    def execution_finished(self, case_id: str, repetition: int, warmup: bool, row: dict | None, **lane) -> None:
        self.done += 1
        label = execution_label(case_id, repetition, warmup, self.repetitions, self.warmups, **lane)
        if row is not None:
            index = self.rows
            self._tolerant(lambda: RunRequestRow.objects.create(
                request_id=self.request.pk, attempt=self.attempt, index=index, case=case_id,
                repetition=row.get("repetition"), ok=bool(row.get("ok")), raw=row))
            self.rows += 1
        error = f" — {row['error']}" if row is not None and row.get("error") else ""
        self.runlog.add(f"[{self.done}/{self.total}] {label} {outcome_text(row)}{error}")
        self._write()

    def finished(self) -> None:
        self.current = ""
        self._write(force=True)
