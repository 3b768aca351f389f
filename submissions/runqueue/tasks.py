"""Celery tasks of the run queue: execute a request on its host; recover lost runs.

`execute_run_request` is delivered on `runs.<host>` and may be delivered more
than once (Redis redelivers an unacknowledged message older than the
visibility timeout; the reaper re-sends a retried request). It is safe
because of the claim: the move `queued → running` is a conditional UPDATE
that also counts the attempt and stores a fresh claim token, so exactly one
delivery runs; every later write by the worker names that token, and a
delivery that finds the request running (or decided) does nothing.

The task is `acks_late` without `reject_on_worker_lost`: a worker that dies
mid-run leaves the request `running` with a heartbeat that stops, and the
reaper (here, in beat, and in every runner worker for its own host) retries
it while attempts are left or fails it with "worker lost". Attempts are
capped in the database, so a run that kills its worker cannot loop
(Sentry's relocation tasks work the same way).
"""

from __future__ import annotations

import logging
import os
import socket
import tempfile
import time
import uuid
from datetime import timedelta
from pathlib import Path

from celery import shared_task
from django.conf import settings
from django.db import connection, transaction
from django.db.models import Exists, F, Q
from django.utils import timezone

from benchpack.errors import BenchpackError
from benchpack.run.runner import run_pack
from submissions import emails
from submissions.models import Submission
from submissions.runqueue import states
from submissions.runqueue.execution import RunRefused, bundle_result, prepare_run
from submissions.runqueue.hosts import record_hardware
from submissions.runqueue.models import RunRequest
from submissions.runqueue.progress import DatabaseProgress, RunInterrupted, RunLog, RunWatch
from submissions.runqueue.services import move, note, send
from submissions.services import dispatch_validation, record_received
from submissions.runqueue import worker as _worker_hooks  # noqa: F401 (connects the runner worker signals)

log = logging.getLogger(__name__)


def worker_label(task_request=None) -> str:
    hostname = getattr(task_request, "hostname", None) or socket.gethostname()
    return f"{hostname} pid {os.getpid()}"


@shared_task(bind=True, acks_late=True, reject_on_worker_lost=False, ignore_result=True)
def execute_run_request(self, request_id: str) -> str:
    worker = worker_label(self.request)
    request = RunRequest.objects.select_related("host", "endpoint", "pack", "requested_by").filter(pk=request_id).first()
    if request is None:
        log.warning("run request %s does not exist (deleted, or its creation was rolled back)", request_id)
        return "missing"
    if settings.RUNNER_HOST != request.host.name:
        # A request for host A must never run on B, whatever queue the message was found on.
        serving = f"runner host {settings.RUNNER_HOST}" if settings.RUNNER_HOST else "no runner host"
        note(request.pk, f"delivery refused by {worker} ({serving}): this request runs on {request.host.queue} only",
             worker=worker)
        return "wrong-host"
    claim = claim_request(request, worker)
    if claim is None:
        return RunRequest.objects.filter(pk=request.pk).values_list("state", flat=True).first() or "missing"
    request.refresh_from_db()
    return run_claimed(request, claim, worker)


def claim_request(request: RunRequest, worker: str):
    """Take the request for this worker: queued → running, attempt counted, a new claim token. None if not won."""
    if request.state == states.QUEUED and request.attempts >= request.max_attempts:
        move(request.pk, (states.QUEUED,), states.FAILED, worker=worker, finished_at=timezone.now(),
             reason=f"attempts used up ({request.attempts} of {request.max_attempts})",
             failure_reason=f"attempts used up ({request.attempts} of {request.max_attempts})")
        return None
    token = uuid.uuid4()
    now = timezone.now()
    # One benchmark at a time per machine, even if someone starts a second worker for it.
    busy = RunRequest.objects.filter(host_id=request.host_id, state=states.RUNNING,
                                     heartbeat_at__gte=now - timedelta(seconds=settings.RUN_HEARTBEAT_TIMEOUT_S))
    attempt = request.attempts + 1
    won = move(
        request.pk, (states.QUEUED,), states.RUNNING, worker=worker,
        reason=f"claimed by {worker} (attempt {attempt} of {request.max_attempts})",
        where=(Q(attempts__lt=F("max_attempts"), cancel_requested_at__isnull=True), ~Exists(busy)),
        attempts=F("attempts") + 1, claim_token=token, claimed_by=worker, started_at=now, heartbeat_at=now,
        progress_done=0, progress_total=0, current="", failure_reason="",
    )
    if won:
        return token
    current = RunRequest.objects.filter(pk=request.pk).values("state", "claimed_by", "attempts").first() or {}
    if current.get("state") == states.RUNNING:
        note(request.pk, f"duplicate delivery ignored by {worker}: already running on {current['claimed_by']} "
                         f"(attempt {current['attempts']})", worker=worker)
    elif current.get("state") == states.QUEUED and busy.exists():
        note(request.pk, f"{worker}: {request.host.name} is busy with another run; left queued (the reaper re-sends it)",
             worker=worker)
    return None


def run_claimed(request: RunRequest, claim_token, worker: str) -> str:
    runlog = RunLog()
    attempt = request.attempts
    runlog.add(f"claimed by {worker}, attempt {attempt} of {request.max_attempts}")
    timings = {"queue_wait_s": round((request.started_at - request.created_at).total_seconds(), 3)}
    finish = _Finisher(request, claim_token, worker, runlog, timings)
    with tempfile.TemporaryDirectory(prefix="benchpack-run-") as tmp, RunWatch(
        request.pk, claim_token, request.time_limit_s, settings.RUN_HEARTBEAT_INTERVAL_S
    ) as watch:
        workdir = Path(tmp)
        try:
            prepared = prepare_run(request, workdir)
        except RunRefused as exc:
            return finish(states.FAILED, str(exc))
        runlog.add(f"endpoint {request.endpoint.url} pinned to {prepared.pin.address}; pack {prepared.pack.id} "
                   f"{prepared.pack.version}; model {request.model}")
        pack = prepared.pack
        progress = DatabaseProgress(request, attempt, watch, runlog, pack.defaults.repetitions, pack.defaults.warmup)
        started = time.monotonic()
        outcome, interrupted = None, False
        watch.arm(True)
        try:
            outcome = run_pack(pack, prepared.options, progress, adapter=prepared.adapter,
                               probe_client=prepared.probe_client)
            interrupted = outcome.interrupted
        except RunInterrupted:
            interrupted = True
        except BenchpackError as exc:
            watch.arm(False)
            return finish(states.FAILED, "the runner refused the run: " + "; ".join(exc.lines()))
        finally:
            watch.arm(False)
            prepared.probe_client.close()
            close = getattr(prepared.adapter, "close", None)
            if close:
                close()
        timings["run_s"] = round(time.monotonic() - started, 3)
        if interrupted:
            connection.close()  # an interrupt may have landed inside a query; start clean
            return _interrupted(finish, watch.stop_reason, progress)
        rows = outcome.rows
        _report_hardware(request, prepared.options.out)
        if not rows or not any(row.get("ok") for row in rows):
            first_error = next((row.get("error") for row in rows if row.get("error")), "no rows were written")
            return finish(states.FAILED, f"every execution failed ({len(rows)} rows, none ok): {first_error}; "
                                         "nothing submitted")
        if outcome.aborted:
            return finish(states.FAILED, f"the run stopped early: {outcome.aborted}; nothing submitted")
        started = time.monotonic()
        try:
            bundled = bundle_result(prepared.options.out, workdir)
        except BenchpackError as exc:
            return finish(states.FAILED, "the result did not bundle: " + "; ".join(exc.lines()))
        timings["bundle_s"] = round(time.monotonic() - started, 3)
        runlog.add(f"bundle {bundled.name}: {len(bundled.data)} bytes, sha256 {bundled.sha256[:12]}")
        if len(bundled.data) > settings.SUBMISSION_MAX_BYTES:
            return finish(states.FAILED, f"the bundle is {len(bundled.data)} bytes, over SUBMISSION_MAX_BYTES "
                                         f"({settings.SUBMISSION_MAX_BYTES}); nothing submitted")
        return _submit(request, claim_token, worker, runlog, timings, bundled, finish, len(rows))


class _Finisher:
    """Ends the claimed attempt in a final state (only while this worker holds the claim)."""

    def __init__(self, request, claim_token, worker, runlog, timings):
        self.request, self.claim, self.worker, self.runlog, self.timings = request, claim_token, worker, runlog, timings

    def __call__(self, to_state: str, reason: str) -> str:
        self.runlog.add(f"{to_state}: {reason}")
        moved = move(self.request.pk, (states.RUNNING,), to_state, worker=self.worker, reason=reason,
                     where=(Q(claim_token=self.claim),), finished_at=timezone.now(), current="",
                     failure_reason=reason if to_state != states.FINISHED else "",
                     log_tail=self.runlog.text(), timings=self.timings)
        if not moved:
            log.warning("run request %s: not moved to %s; this worker no longer holds it", self.request.pk, to_state)
        return to_state if moved else "lost-claim"


def _interrupted(finish: _Finisher, reason: str | None, progress: DatabaseProgress) -> str:
    kept = f"{progress.rows} rows kept, never published"
    if reason == "cancelled":
        return finish(states.CANCELLED, f"cancelled after {progress.done} of {progress.total} executions; {kept}")
    if reason and reason.startswith("time limit"):
        return finish(states.FAILED, f"{reason} after {progress.done} of {progress.total} executions; {kept}; "
                                     "nothing submitted")
    if reason and reason.startswith("this worker no longer holds"):
        log.warning("run request %s: %s", finish.request.pk, reason)
        return "lost-claim"
    return finish(states.FAILED, f"interrupted ({reason or 'SIGINT'}) after {progress.done} executions; {kept}")


def _report_hardware(request: RunRequest, result_dir: Path) -> None:
    import json

    try:
        hardware = json.loads((result_dir / "hardware.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    record_hardware(request.host, hardware)


def _submit(request, claim_token, worker, runlog, timings, bundled, finish, row_count: int) -> str:
    """File the bundle as a submission by the requester, in the transaction that finishes the request.

    As for uploads: the "received" email is queued in the transaction and the
    validation message sent after commit (the reaper sends it if that fails).
    """
    with transaction.atomic():
        submission = Submission.objects.create(
            submitter=request.requested_by,
            archive_name=bundled.name[:255],
            archive_sha256=bundled.sha256,
            archive_size=len(bundled.data),
            archive=bundled.data,
            is_demo=request.is_demo,
        )
        record_received(submission)
        runlog.add(f"submission {submission.pk} created ({row_count} rows); validation and review follow")
        moved = move(request.pk, (states.RUNNING,), states.FINISHED, worker=worker,
                     reason=f"finished; submission {submission.pk} goes to validation and review",
                     where=(Q(claim_token=claim_token, cancel_requested_at__isnull=True),),
                     submission=submission, finished_at=timezone.now(), current="", log_tail=runlog.text(),
                     timings=timings)
        if moved:
            emails.send_received(submission)
            transaction.on_commit(lambda: dispatch_validation(submission.pk), robust=True)
        else:
            transaction.set_rollback(True)
    if not moved:
        state = RunRequest.objects.filter(pk=request.pk).values("cancel_requested_at", "claim_token").first() or {}
        if state.get("cancel_requested_at") and state.get("claim_token") == claim_token:
            return finish(states.CANCELLED, "cancelled while the result was being bundled; nothing submitted")
        log.warning("run request %s: lost the claim before submitting; nothing submitted", request.pk)
        return "lost-claim"
    return states.FINISHED


# --- recovery ---------------------------------------------------------------------


def recover_lost_runs(host_id=None, now=None) -> list[tuple[str, str]]:
    """Requests whose worker went silent: retried while attempts are left, else failed.

    Also sends requests whose message never left (the process died between
    commit and send). Returns (request id, what happened) pairs.
    """
    now = now or timezone.now()
    cutoff = now - timedelta(seconds=settings.RUN_HEARTBEAT_TIMEOUT_S)
    silent = RunRequest.objects.silent_runs(cutoff)
    if host_id is not None:
        silent = silent.filter(host_id=host_id)
    done = []
    for lost in silent.select_related("host"):
        done.append((str(lost.pk), _recover(lost, cutoff, now)))
    never_sent = RunRequest.objects.never_sent(now - timedelta(seconds=60)).select_related("host")
    if host_id is not None:
        never_sent = never_sent.filter(host_id=host_id)
    for waiting in never_sent:
        send(waiting)
        done.append((str(waiting.pk), "sent"))
    return done


def _recover(lost: RunRequest, cutoff, now) -> str:
    silent_for = int((now - lost.heartbeat_at).total_seconds())
    who = f"{lost.claimed_by or 'the worker'} sent no heartbeat for {silent_for} s"
    still = Q(claim_token=lost.claim_token, heartbeat_at__lt=cutoff)
    if lost.cancel_requested_at:
        outcome, reason = states.CANCELLED, f"cancelled; the worker was lost before it stopped ({who})"
    elif lost.started_at and (now - lost.started_at).total_seconds() > lost.time_limit_s:
        outcome, reason = states.FAILED, f"time limit of {lost.time_limit_s} s passed and the worker was lost ({who})"
    elif lost.attempts < lost.max_attempts:
        reason = f"worker lost ({who}); retrying: attempt {lost.attempts + 1} of {lost.max_attempts}"
        if move(lost.pk, (states.RUNNING,), states.QUEUED, reason=reason, where=(still,), claim_token=None,
                sent_at=None, heartbeat_at=None, current="", failure_reason=""):
            try:
                send(lost)
            except Exception:  # the next reaper pass sends it (never_sent)
                log.exception("run request %s: retry not sent", lost.pk)
            return "retried"
        return "unchanged"
    else:
        outcome, reason = states.FAILED, f"worker lost ({who}) on attempt {lost.attempts} of {lost.max_attempts}; not retried"
    moved = move(lost.pk, (states.RUNNING,), outcome, reason=reason, where=(still,), finished_at=now, current="",
                 failure_reason=reason if outcome == states.FAILED else "")
    return outcome if moved else "unchanged"


@shared_task(acks_late=True, ignore_result=True)
def reap_lost_runs() -> int:
    done = recover_lost_runs()
    if done:
        log.warning("run queue reaper: %s", done)
    return len(done)
