"""What a running request tells the registry, and how it is stopped (over the runner-host API).

`HttpProgress` is the core runner's `ProgressSink`: measured rows, executions
done / total, the current case and a log tail go to the registry (rows in
batches, at most every PROGRESS_WRITE_EVERY_S; the result directory holds
every row anyway, and that is what gets bundled).

`RunWatch` is a thread beside the run. It sends the run's heartbeat, learns
of a cancel, the time limit, a lost claim or a revoked token, and then stops
the run: at the next request boundary, or, when the request in flight does
not end within `grace_s`, by interrupting it (SIGINT to this thread, turned
into `RunInterrupted`, which the runner treats like Ctrl-C: rows on disk
kept, repo-task agent process groups killed).

It stays out of the runner's timed windows (`benchpack.measurement.window`):
a network round trip holds the GIL for a moment, and a token arriving
meanwhile would be stamped late. So it calls between requests; the runner's
thread itself looks for a cancel at every request boundary; and only a
request that keeps its window open for longer than a heartbeat interval gets
a heartbeat (and a cancel check) from inside it.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections import deque
from datetime import datetime, timezone

from benchpack.measurement.window import window_open
from benchpack.run.progress import execution_label, outcome_text
from submissions.runqueue.runner.client import ClaimLost, RegistryClient, RegistryError, TokenRevoked

log = logging.getLogger(__name__)

LOG_LINES = 200
PROGRESS_WRITE_EVERY_S = 0.5
ROWS_PER_CALL = 100
LOST = "this worker no longer holds the request (the reaper gave it up, or it was finished elsewhere)"
REVOKED = "the host token was revoked or rotated; this worker stops"


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
        self.lines.append(f"{datetime.now(timezone.utc):%H:%M:%S} {message[:500]}")
        log.info("%s", message)

    def text(self) -> str:
        return "\n".join(self.lines)


class RunWatch:
    def __init__(self, client: RegistryClient, request_id: str, claim: str, time_limit_s: float, heartbeat_s: float,
                 *, poll_s: float = 0.5, grace_s: float = 1.0):
        self.client, self.request_id, self.claim = client, request_id, claim
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
        self._lock = threading.Lock()  # one call at a time on the shared client
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
            self.call(lambda: self.client.heartbeat(self.request_id, self.claim))
        if self.stop_reason and self._armed and not self._raised:
            self._raised = True
            raise RunInterrupted(self.stop_reason)

    def call(self, send) -> dict | None:
        """One call to the registry; its answer may say stop. A registry that does not answer must
        not end a benchmark (the next call tries again); a revoked token or a lost claim ends it."""
        with self._lock:
            self._last_look = time.monotonic()
            try:
                answer = send()
            except TokenRevoked:
                self._stop(REVOKED)
                return None
            except ClaimLost:
                self._stop(LOST)
                return None
            except RegistryError as exc:
                log.warning("run request %s: the registry call failed (%s); going on", self.request_id, exc)
                return None
        if answer and answer.get("stop") == "lost":
            self._stop(LOST)
        elif answer and answer.get("stop") == "cancelled":
            self._stop("cancelled")
        return answer

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
        """May the network be used now? Not inside a timed window, unless it has been open a heartbeat long."""
        if not window_open():
            self._deferred_since = None
            return True
        if self._deferred_since is None:
            self._deferred_since = now
        if now - self._deferred_since >= self.heartbeat_s:
            self._deferred_since = now  # a long request: one beat per heartbeat interval
            return True
        return False

    def _loop(self) -> None:
        while not self._done.wait(self.poll_s):
            now = time.monotonic()
            if (self.stop_reason is None and now - self._last_look >= min(self.heartbeat_s, 1.0)
                    and self._polite(now)):
                self.call(lambda: self.client.heartbeat(self.request_id, self.claim))
            if now - self._started > self.time_limit_s:
                self._stop(f"time limit of {self.time_limit_s:g} s reached")
            if (self.stop_reason and self._armed and not self._raised and self._main is not None
                    and now - self.stopped_at >= self.grace_s):
                # The request in flight did not end in time: interrupt it.
                signal.pthread_kill(self._main, signal.SIGINT)


class HttpProgress:
    """The runner's ProgressSink, reporting to the registry."""

    def __init__(self, request_id: str, attempt: int, watch: RunWatch, runlog: RunLog, repetitions: int,
                 warmups: int):
        self.request_id, self.attempt, self.watch, self.runlog = request_id, attempt, watch, runlog
        self.repetitions, self.warmups = repetitions, warmups
        self.total = self.done = self.rows = 0
        self.current = ""
        self.pending: list[dict] = []
        self._written_at = 0.0

    def flush(self, force: bool = True) -> None:
        now = time.monotonic()
        if not force and now - self._written_at < PROGRESS_WRITE_EVERY_S and len(self.pending) < ROWS_PER_CALL:
            return
        self._written_at = now
        while True:
            batch, self.pending = self.pending[:ROWS_PER_CALL], self.pending[ROWS_PER_CALL:]
            answer = self.watch.call(lambda: self.watch.client.progress(
                self.request_id, self.watch.claim, attempt=self.attempt, done=self.done, total=self.total,
                current=self.current[:255], log_tail=self.runlog.text(), rows=batch))
            if answer is None and batch:
                self.pending = batch + self.pending  # not taken: sent with the next call
                return
            if not self.pending:
                return

    def started(self, total_executions: int) -> None:
        self.total, self.done = total_executions, 0
        self.runlog.add(f"running {total_executions} executions")
        self.flush()

    def execution_started(self, case_id: str, repetition: int, warmup: bool, **lane) -> None:
        self.watch.check()
        self.current = execution_label(case_id, repetition, warmup, self.repetitions, self.warmups, **lane)
        self.flush(force=False)

    def execution_finished(self, case_id: str, repetition: int, warmup: bool, row: dict | None, **lane) -> None:
        self.done += 1
        label = execution_label(case_id, repetition, warmup, self.repetitions, self.warmups, **lane)
        if row is not None:
            self.pending.append({"index": self.rows, "case": case_id, "repetition": row.get("repetition"),
                                 "ok": bool(row.get("ok")), "raw": row})
            self.rows += 1
        error = f" — {row['error']}" if row is not None and row.get("error") else ""
        self.runlog.add(f"[{self.done}/{self.total}] {label} {outcome_text(row)}{error}")
        self.flush(force=False)

    def finished(self) -> None:
        self.current = ""
        self.flush()
