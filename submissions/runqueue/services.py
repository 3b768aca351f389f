"""State changes of run requests, and creating and cancelling them.

Every move is one conditional UPDATE (`WHERE id = … AND state = …`, plus the
claim token for moves a worker makes) whose row count says whether this
caller won; only the winner writes the event row. The UPDATE comes first in
its transaction, so SQLite takes the write lock at once instead of failing
a read-to-write upgrade.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from accounts.operators import is_operator
from submissions.runqueue import states
from submissions.runqueue.models import RunnerHost, RunRequest, RunRequestEvent

log = logging.getLogger(__name__)


class RequestRefused(Exception):
    """A run request that cannot be made, with the one message that says why."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.message = message
        self.status = status


def move(request_id, from_states: tuple[str, ...], to_state: str, *, actor=None, reason: str = "",
         worker: str = "", where: tuple = (), **fields) -> bool:
    """Move the request to `to_state` if it is in one of `from_states` (and matches the `where` conditions)."""
    for from_state in from_states:
        if to_state not in states.ALLOWED[from_state]:
            raise ValueError(f"{from_state} -> {to_state} is not an allowed transition")
    for from_state in from_states:
        with transaction.atomic():
            candidates = RunRequest.objects.filter(pk=request_id, state=from_state).filter(*where)
            if candidates.update(state=to_state, updated_at=timezone.now(), **fields) != 1:
                continue
            RunRequestEvent.objects.create(request_id=request_id, actor=actor, from_state=from_state,
                                           to_state=to_state, reason=reason, worker=worker)
            return True
    return False


def note(request_id, reason: str, *, actor=None, worker: str = "") -> None:
    """An event that changes no state (a cancel asked for, a refused delivery)."""
    state = RunRequest.objects.filter(pk=request_id).values_list("state", flat=True).first() or ""
    RunRequestEvent.objects.create(request_id=request_id, actor=actor, from_state=state, to_state=state,
                                   reason=reason, worker=worker)


def can_request_on(user, host: RunnerHost) -> bool:
    return host.enabled and (is_operator(user) or host.owner_id == user.pk)


def hard_time_limit(time_limit_s: int) -> int:
    """Celery's kill switch, behind the worker's own limit (which stops between requests)."""
    return int(time_limit_s * 1.2) + 60


# The runner hosts' task, by name: it lives in the runner worker
# (submissions.runqueue.runner.app), which is not this Django project.
EXECUTE_TASK = "benchpack.runner.execute_run_request"


def send(request: RunRequest) -> None:
    """Put the request on its host's queue; `sent_at` tells the reaper it went out.

    The message carries only the request id; the worker learns the rest by
    claiming it over the runner-host API with its token.
    """
    from submissions.runqueue.broker import send_task

    send_task(
        EXECUTE_TASK,
        host=request.host.name,
        args=[str(request.pk)],
        queue=request.host.queue,
        time_limit=hard_time_limit(request.time_limit_s),
        soft_time_limit=hard_time_limit(request.time_limit_s) - 10,
        retry=True,
        retry_policy={"max_retries": 2, "interval_start": 0.2, "interval_step": 0.3, "interval_max": 0.5},
    )
    request.sent_at = timezone.now()
    RunRequest.objects.filter(pk=request.pk).update(sent_at=request.sent_at)


def create_run_request(user, *, host: str, endpoint: str, model: str, pack: str, pack_version: str | None = None,
                       openai_stream_usage: str = "include", repetitions: int | None = None,
                       time_limit_s: int | None = None, reproduction_of=None, is_demo: bool = False) -> RunRequest:
    """Check every choice against the host's allowlists, store the request, send it.

    Nothing a caller passes is ever used as an address: the endpoint is an
    allowlist entry chosen by name. If the broker cannot take the message,
    the committed row is its own outbox, as an upload's is: `sent_at` stays
    empty and the reaper (`reap_lost_runs`, every minute) sends it once the
    broker is back; the caller gets the queued request either way.
    """
    choice = _checked_choice(user, host, endpoint, model, pack, pack_version, openai_stream_usage, repetitions,
                             time_limit_s)
    with transaction.atomic():
        request = RunRequest.objects.create(
            requested_by=user, max_attempts=settings.RUN_REQUEST_MAX_ATTEMPTS, reproduction_of=reproduction_of,
            is_demo=is_demo, **choice,
        )
        RunRequestEvent.objects.create(request=request, actor=user, from_state="", to_state=states.QUEUED,
                                       reason=f"queued for {request.host.queue}")
    try:
        send(request)
    except Exception as exc:  # kombu/redis connection errors come in several classes
        log.warning("run request %s stays queued unsent, broker unreachable (%s: %s); the reaper sends it",
                    request.pk, type(exc).__name__, exc)
    return request


def _checked_choice(user, host_name, endpoint_name, model, pack_id, pack_version, stream_usage, repetitions,
                    time_limit_s) -> dict:
    host = RunnerHost.objects.filter(name=host_name).first()
    if host is None or not host.enabled:
        raise RequestRefused(f"no enabled runner host named {host_name!r}")
    if not can_request_on(user, host):
        raise RequestRefused(f"only operators and the owner of {host.name} may queue runs there", status=403)
    endpoint = host.endpoints.filter(name=endpoint_name, enabled=True).first()
    if endpoint is None:
        allowed = ", ".join(host.endpoints.filter(enabled=True).values_list("name", flat=True)) or "none"
        raise RequestRefused(
            f"{endpoint_name!r} is not on the endpoint allowlist of {host.name} (allowlisted: {allowed}); "
            "endpoints are chosen by name, never by URL"
        )
    if model not in endpoint.model_names():
        raise RequestRefused(
            f"model {model!r} is not served by {endpoint} (allowlisted: {', '.join(endpoint.model_names()) or 'none'})"
        )
    packs = host.packs.filter(pack_id=pack_id, enabled=True)
    pack = packs.filter(version=pack_version).first() if pack_version else packs.order_by("-pk").first()
    if pack is None:
        allowed = ", ".join(str(p) for p in host.packs.filter(enabled=True)) or "none"
        wanted = f"{pack_id} {pack_version}" if pack_version else pack_id
        raise RequestRefused(f"pack {wanted!r} is not on the pack allowlist of {host.name} (allowlisted: {allowed})")
    if stream_usage not in ("include", "omit"):
        raise RequestRefused(f"openai_stream_usage must be include or omit, not {stream_usage!r}")
    if stream_usage == "omit" and endpoint.adapter != "openai-chat":
        raise RequestRefused("openai_stream_usage applies to openai-chat endpoints only")
    if repetitions is not None and not (isinstance(repetitions, int) and not isinstance(repetitions, bool)
                                        and 1 <= repetitions <= settings.RUN_REQUEST_MAX_REPETITIONS):
        raise RequestRefused(f"repetitions must be an integer from 1 to {settings.RUN_REQUEST_MAX_REPETITIONS}")
    if time_limit_s is None:
        time_limit_s = settings.RUN_REQUEST_DEFAULT_TIME_LIMIT_S
    if not (isinstance(time_limit_s, int) and not isinstance(time_limit_s, bool)
            and 1 <= time_limit_s <= settings.RUN_REQUEST_MAX_S):
        raise RequestRefused(f"time_limit_s must be an integer from 1 to {settings.RUN_REQUEST_MAX_S} (RUN_REQUEST_MAX_S)")
    return {"host": host, "endpoint": endpoint, "model": model, "pack": pack, "openai_stream_usage": stream_usage,
            "repetitions": repetitions, "time_limit_s": time_limit_s}


def cancel_run_request(request_id, user) -> str:
    """Cancel a queued request at once; ask the worker to stop a running one.

    Returns what happened: "cancelled", "requested" (the worker stops between
    requests, within a second or two) or "final" (nothing to cancel).
    """
    now = timezone.now()
    if move(request_id, (states.QUEUED,), states.CANCELLED, actor=user, reason=f"cancelled by {user.email} before it started",
            finished_at=now, cancel_requested_at=now):
        return "cancelled"
    with transaction.atomic():
        asked = RunRequest.objects.filter(pk=request_id, state=states.RUNNING, cancel_requested_at__isnull=True).update(
            cancel_requested_at=now, updated_at=now
        )
        if asked:
            note(request_id, f"cancel requested by {user.email}; the worker stops before its next request", actor=user)
    if asked:
        return "requested"
    state = RunRequest.objects.filter(pk=request_id).values_list("state", flat=True).first()
    return "requested" if state == states.RUNNING else "final"
