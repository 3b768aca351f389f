"""What a runner host may do to its run requests, decided by the server.

Every call of the runner-host API (submissions.api.runner_host_v1) lands
here with the host its token belongs to. Each function checks that the
request is assigned to *that* host (`RunnerHost` of the token, never a name
the worker sends), and each state change is one conditional UPDATE whose row
count decides (services.move), naming the claim token for every move after
the claim. The result is filed as a submission by the *request's* submitter.

A call about another host's request raises `NotYours` (the API answers 403
and changes nothing); a call that lost the claim gets `Lost` (409).
"""

from __future__ import annotations

import base64
import hashlib
import logging
import uuid
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Exists, F, Q
from django.utils import timezone

from submissions import emails
from submissions.models import Submission
from submissions.states import FAILED as SUBMISSION_FAILED
from submissions.runqueue import states
from submissions.runqueue.hosts import record_hardware
from submissions.runqueue.models import RunnerHost, RunRequest, RunRequestRow
from submissions.runqueue.services import move, note
from submissions.services import dispatch_validation, record_received

log = logging.getLogger(__name__)
LOG_TAIL_MAX = 64 * 1024


class NotYours(Exception):
    """The request does not exist or is assigned to another host (403, nothing changed)."""


class Lost(Exception):
    """This worker no longer holds the request (409)."""


def request_of(host: RunnerHost, request_id) -> RunRequest:
    try:
        request = (RunRequest.objects.select_related("host", "endpoint", "pack")
                   .filter(pk=uuid.UUID(str(request_id))).first())
    except ValueError:
        request = None
    if request is None or request.host_id != host.pk:
        # Same answer for "not yours" and "does not exist": a token learns nothing about other hosts.
        raise NotYours(f"run request {request_id} is not assigned to runner host {host.name}")
    return request


def _held(request: RunRequest, claim) -> Q:
    return Q(claim_token=claim) if claim else Q(pk__in=[])


def spec(request: RunRequest) -> dict:
    """What the worker needs to run it: the allowlisted endpoint (URL and the addresses it may
    connect to), the model, the pack (by id, or the operator's archive) and the options."""
    endpoint, entry = request.endpoint, request.pack
    return {
        "id": str(request.pk), "host": request.host.name, "attempt": request.attempts,
        "max_attempts": request.max_attempts,
        "endpoint": {"name": endpoint.name, "url": endpoint.url, "adapter": endpoint.adapter,
                     "addresses": list(endpoint.addresses), "runtime_name": endpoint.runtime_name,
                     "runtime_version": endpoint.runtime_version},
        "model": request.model, "quantization": endpoint.quantization_of(request.model),
        "pack": {"id": entry.pack_id, "version": entry.version, "source": entry.source,
                 "archive_b64": base64.b64encode(bytes(entry.archive)).decode() if entry.archive_sha256 else None,
                 "archive_sha256": entry.archive_sha256},
        "openai_stream_usage": request.openai_stream_usage, "repetitions": request.repetitions,
        "time_limit_s": request.time_limit_s, "heartbeat_s": settings.RUN_HEARTBEAT_INTERVAL_S,
        "max_bundle_bytes": settings.SUBMISSION_MAX_BYTES,
        "queue_wait_s": round((request.started_at - request.created_at).total_seconds(), 3)
        if request.started_at else None,
    }


def _allowlist_refusal(request: RunRequest) -> str | None:
    """The allowlists again at the start (an operator may have changed them since it was queued)."""
    host, endpoint, entry = request.host, request.endpoint, request.pack
    if not host.enabled:
        return f"runner host {host.name} is disabled"
    if not host.hardware_class:
        # Its bundle would be refused (runqueue.evidence): say so before running, not after.
        return (f"runner host {host.name} has no approved hardware class yet "
                f"(an operator approves it: manage.py runner_host approve {host.name})")
    if endpoint.host_id != host.pk or not endpoint.enabled:
        return f"endpoint {endpoint.name} is no longer on the allowlist of {host.name}"
    if request.model not in endpoint.model_names():
        return f"model {request.model} is no longer allowlisted for {endpoint}"
    if entry.host_id != host.pk or not entry.enabled:
        return f"pack {entry} is no longer on the pack allowlist of {host.name}"
    return None


def claim(host: RunnerHost, request_id, worker: str) -> dict:
    """queued → running for this host's worker: one conditional UPDATE, one winner.

    Returns {"claimed": true, "claim": token, "spec": …} or {"claimed": false, "state": …, "reason": …}.
    """
    request = request_of(host, request_id)
    worker = worker[:200] or "worker"
    if request.state == states.QUEUED and request.attempts >= request.max_attempts:
        reason = f"attempts used up ({request.attempts} of {request.max_attempts})"
        move(request.pk, (states.QUEUED,), states.FAILED, worker=worker, finished_at=timezone.now(), reason=reason,
             failure_reason=reason)
        return {"claimed": False, "state": states.FAILED, "reason": reason}
    token, now = uuid.uuid4(), timezone.now()
    # One benchmark at a time per machine, even if someone starts a second worker for it.
    busy = RunRequest.objects.filter(host_id=host.pk, state=states.RUNNING,
                                     heartbeat_at__gte=now - timedelta(seconds=settings.RUN_HEARTBEAT_TIMEOUT_S))
    attempt = request.attempts + 1
    won = move(
        request.pk, (states.QUEUED,), states.RUNNING, worker=worker,
        reason=f"claimed by {worker} (attempt {attempt} of {request.max_attempts})",
        where=(Q(attempts__lt=F("max_attempts"), cancel_requested_at__isnull=True), ~Exists(busy)),
        attempts=F("attempts") + 1, claim_token=token, claimed_by=worker, started_at=now, heartbeat_at=now,
        progress_done=0, progress_total=0, current="", failure_reason="",
    )
    if not won:
        current = RunRequest.objects.filter(pk=request.pk).values("state", "claimed_by", "attempts").first() or {}
        if current.get("state") == states.RUNNING:
            reason = f"already running on {current['claimed_by']} (attempt {current['attempts']})"
            note(request.pk, f"duplicate delivery ignored by {worker}: {reason}", worker=worker)
        elif current.get("state") == states.QUEUED and busy.exists():
            reason = f"{host.name} is busy with another run; left queued (the reaper re-sends it)"
            note(request.pk, f"{worker}: {reason}", worker=worker)
        else:
            reason = f"the request is {current.get('state', 'gone')}"
        return {"claimed": False, "state": current.get("state", ""), "reason": reason}
    request.refresh_from_db()
    refusal = _allowlist_refusal(request)
    if refusal:
        end(host, request.pk, token, states.FAILED, refusal, worker=worker)
        return {"claimed": False, "state": states.FAILED, "reason": refusal}
    return {"claimed": True, "claim": str(token), "spec": spec(request)}


def beat(host: RunnerHost, request_id, claim_token) -> dict:
    """The run's heartbeat; answers whether to stop (a cancel, or the claim is gone)."""
    request = request_of(host, request_id)
    held = RunRequest.objects.filter(pk=request.pk, state=states.RUNNING).filter(_held(request, claim_token)).update(
        heartbeat_at=timezone.now())
    if not held:
        return {"stop": "lost", "reason": "this worker no longer holds the request (the reaper gave it up, "
                                          "or it was finished elsewhere)"}
    cancel = RunRequest.objects.filter(pk=request.pk).values_list("cancel_requested_at", flat=True).first()
    return {"stop": "cancelled" if cancel else None, "reason": "cancelled" if cancel else ""}


def progress(host: RunnerHost, request_id, claim_token, *, attempt: int, done: int, total: int, current: str,
             log_tail: str, rows: list[dict]) -> dict:
    """Rows as they land (kept if the run is cancelled or fails; never published), counts, the log tail."""
    request = request_of(host, request_id)
    if attempt != request.attempts:
        # Rows are evidence of the claimed attempt only (runqueue.evidence): none filed ahead under another.
        raise Lost(f"attempt {attempt} is not the claimed attempt ({request.attempts}); nothing stored")
    with transaction.atomic():
        held = RunRequest.objects.filter(pk=request.pk, state=states.RUNNING).filter(_held(request, claim_token)).update(
            progress_done=done, progress_total=total, current=current[:255], log_tail=log_tail[-LOG_TAIL_MAX:],
            heartbeat_at=timezone.now())
        if not held:
            raise Lost("this worker no longer holds the request")
        if rows:
            RunRequestRow.objects.bulk_create(
                [RunRequestRow(request_id=request.pk, attempt=attempt, index=row["index"], case=str(row["case"])[:128],
                               repetition=row.get("repetition"), ok=bool(row.get("ok")), raw=row["raw"])
                 for row in rows],
                ignore_conflicts=True)  # a retried call after a timeout sends the same rows again
    return beat(host, request_id, claim_token)


def host_beat(host: RunnerHost, worker: str, hardware: dict | None) -> list[tuple[str, str]]:
    """The host's heartbeat (online), its hardware report, and recovery of its own lost runs."""
    from submissions.runqueue.recovery import recover_lost_runs

    RunnerHost.objects.filter(pk=host.pk).update(heartbeat_at=timezone.now(), worker_name=worker[:255])
    if hardware:
        record_hardware(host, hardware)
    return recover_lost_runs(host_id=host.pk)


def host_stopping(host: RunnerHost, worker: str) -> None:
    RunnerHost.objects.filter(pk=host.pk, worker_name=worker[:255]).update(heartbeat_at=None)


def end(host: RunnerHost, request_id, claim_token, to_state: str, reason: str, *, worker: str = "",
        log_tail: str = "", timings: dict | None = None) -> str:
    """Ends the claimed attempt failed or cancelled (only while the caller holds the claim)."""
    if to_state not in (states.FAILED, states.CANCELLED):
        raise ValueError(f"a worker ends a run failed or cancelled, not {to_state}")
    request = request_of(host, request_id)
    moved = move(request.pk, (states.RUNNING,), to_state, worker=worker or request.claimed_by, reason=reason[:2000],
                 where=(_held(request, claim_token),), finished_at=timezone.now(), current="",
                 failure_reason=reason[:2000], log_tail=log_tail[-LOG_TAIL_MAX:], timings=timings or {})
    if not moved:
        raise Lost(f"not moved to {to_state}: this worker no longer holds the request")
    return to_state


def finish(host: RunnerHost, request_id, claim_token, *, name: str, data: bytes, log_tail: str, timings: dict,
           row_count: int, worker: str = "") -> Submission:
    """File the bundle as a submission by the run request's submitter, in the transaction that finishes the request.

    As for uploads: the "received" email is queued in the transaction and the
    validation message sent after commit (the reaper sends it if that fails).
    """
    request = request_of(host, request_id)
    # The claim first, before anything is inserted: a replayed finish, or one for a run never claimed,
    # stores nothing and learns nothing (not even whether these archive bytes were submitted before).
    if not RunRequest.objects.filter(pk=request.pk, state=states.RUNNING).filter(_held(request, claim_token)).exists():
        raise Lost("this worker does not hold the request (never claimed, finished already, or given up); "
                   "nothing submitted")
    if len(data) > settings.SUBMISSION_MAX_BYTES:
        reason = (f"the bundle is {len(data)} bytes, over SUBMISSION_MAX_BYTES ({settings.SUBMISSION_MAX_BYTES}); "
                  "nothing submitted")
        end(host, request_id, claim_token, states.FAILED, reason, worker=worker, log_tail=log_tail, timings=timings)
        raise Lost(reason)
    digest = hashlib.sha256(data).hexdigest()
    if Submission.objects.filter(archive_sha256=digest).exclude(state=SUBMISSION_FAILED).exists():
        # Only a claim holder gets here; it is told "refused", the run request's page says why.
        end(host, request_id, claim_token, states.FAILED, "the bundle's bytes match an archive submitted before; "
            "nothing submitted", worker=worker, log_tail=log_tail, timings=timings)
        raise Lost("the bundle was refused; nothing submitted")
    try:
        return _file(request, claim_token, name=name, data=data, digest=digest, log_tail=log_tail, timings=timings,
                     row_count=row_count, worker=worker, host=host, request_id=request_id)
    except IntegrityError:  # a concurrent finish of the same bytes won the insert: nothing stored here
        raise Lost("the bundle was refused; nothing submitted") from None


def _file(request, claim_token, *, name, data, digest, log_tail, timings, row_count, worker, host, request_id):
    with transaction.atomic():
        submission = Submission.objects.create(
            submitter_id=request.requested_by_id,  # never whoever the worker says
            archive_name=name[:255], archive_sha256=digest, archive_size=len(data),
            archive=data, is_demo=request.is_demo,
        )
        record_received(submission)
        log_tail = (log_tail + f"\nsubmission {submission.pk} created ({row_count} rows); validation and review "
                               "follow")[-LOG_TAIL_MAX:]
        moved = move(request.pk, (states.RUNNING,), states.FINISHED, worker=worker or request.claimed_by,
                     reason=f"finished; submission {submission.pk} goes to validation and review",
                     where=(_held(request, claim_token), Q(cancel_requested_at__isnull=True)),
                     submission=submission, finished_at=timezone.now(), current="", log_tail=log_tail,
                     timings=timings)
        if moved:
            emails.send_received(submission)
            transaction.on_commit(lambda: dispatch_validation(submission.pk), robust=True)
        else:
            transaction.set_rollback(True)
    if not moved:
        state = RunRequest.objects.filter(pk=request.pk).values("cancel_requested_at", "claim_token").first() or {}
        if state.get("cancel_requested_at") and str(state.get("claim_token")) == str(claim_token):
            end(host, request_id, claim_token, states.CANCELLED,
                "cancelled while the result was being bundled; nothing submitted", worker=worker, log_tail=log_tail,
                timings=timings)
            raise Lost("cancelled while the result was being bundled; nothing submitted")
        raise Lost("lost the claim before submitting; nothing submitted")
    return submission
