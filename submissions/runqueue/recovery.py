"""Recovering runs whose worker went silent (called by the reaper task and by each host's heartbeat)."""

from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from submissions.runqueue import states
from submissions.runqueue.models import RunRequest
from submissions.runqueue.services import move, note, send

log = logging.getLogger(__name__)


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
    queued = RunRequest.objects.filter(state=states.QUEUED).select_related("host")
    if host_id is not None:
        queued = queued.filter(host_id=host_id)
    for waiting in queued:
        outcome = _queued(waiting, now)
        if outcome:
            done.append((str(waiting.pk), outcome))
    return done


def _queued(waiting: RunRequest, now) -> str | None:
    """Every queued request runs, is sent (again), or ends with a reason — none waits unseen.

    - its host was revoked (no token) or disabled: no worker can ever claim it; it ends failed;
    - queued longer than RUN_REQUEST_MAX_QUEUED_S (its host stayed offline): ends failed;
    - never sent (the broker was down, or the process died before sending): sent;
    - sent more than RUN_RESEND_AFTER_S ago while its host is online and idle (a busy host left
      it queued, or its message was lost with a purged queue): sent again. A second delivery is
      harmless: the claim is one conditional UPDATE.
    """
    host = waiting.host
    why = None
    if not host.token_hash:
        why = f"runner host {host.name} has no host token (revoked); no worker can take this request"
    elif not host.enabled:
        why = f"runner host {host.name} is disabled; no worker can take this request"
    elif (now - waiting.created_at).total_seconds() > settings.RUN_REQUEST_MAX_QUEUED_S:
        why = (f"not started within RUN_REQUEST_MAX_QUEUED_S ({settings.RUN_REQUEST_MAX_QUEUED_S} s): runner host "
               f"{host.name} did not take it")
    if why:
        moved = move(waiting.pk, (states.QUEUED,), states.FAILED, reason=why, finished_at=now, failure_reason=why)
        return states.FAILED if moved else None
    if waiting.sent_at is None:
        if (now - waiting.created_at).total_seconds() < 5:
            return None  # its own request is still sending it
        return _send(waiting, "sent")
    waited = (now - waiting.sent_at).total_seconds()
    if waited < settings.RUN_RESEND_AFTER_S or not _online_and_idle(host, now):
        return None
    note(waiting.pk, f"sent {int(waited)} s ago and not taken while {host.name} is online and idle (busy before, "
                     "or the message was lost); sent again")
    return _send(waiting, "re-sent")


def _online_and_idle(host, now) -> bool:
    if host.heartbeat_at is None or (now - host.heartbeat_at).total_seconds() > settings.RUNNER_HOST_OFFLINE_AFTER_S:
        return False
    fresh = now - timedelta(seconds=settings.RUN_HEARTBEAT_TIMEOUT_S)
    return not RunRequest.objects.filter(host_id=host.pk, state=states.RUNNING, heartbeat_at__gte=fresh).exists()


def _send(waiting: RunRequest, outcome: str) -> str | None:
    try:
        send(waiting)
    except Exception:  # the broker is down: the next pass tries again
        log.exception("run request %s: not sent", waiting.pk)
        return None
    return outcome


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
