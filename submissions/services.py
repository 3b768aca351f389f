"""State changes of submissions.

Every transition is one conditional UPDATE (`WHERE id = … AND state IN …`)
whose row count says whether this caller won; only the winner writes the
event row and sends email. Running the same step twice, or two operators
clicking at once, therefore changes nothing the second time.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from submissions import states
from submissions.models import Submission, SubmissionEvent


class TransitionRefused(Exception):
    """The submission was not in a state that allows this step (already decided, say)."""


@dataclass(frozen=True)
class Transition:
    submission_id: object
    from_states: tuple[str, ...]
    to_state: str
    actor: object = None
    reason: str = ""


def apply_transition(step: Transition, **fields) -> bool:
    """Move the submission if (and only if) it is still in one of `from_states`.

    Returns True when this call made the change. Must run inside a
    transaction when other writes depend on the outcome.
    """
    for from_state in step.from_states:
        if step.to_state not in states.ALLOWED[from_state]:
            raise ValueError(f"{from_state} -> {step.to_state} is not an allowed transition")
    with transaction.atomic():
        current = (
            Submission.objects.filter(pk=step.submission_id, state__in=step.from_states)
            .values_list("state", flat=True)
            .first()
        )
        if current is None:
            return False
        changed = Submission.objects.filter(pk=step.submission_id, state=current).update(
            state=step.to_state, updated_at=timezone.now(), **fields
        )
        if changed != 1:
            return False
        SubmissionEvent.objects.create(
            submission_id=step.submission_id,
            actor=step.actor,
            from_state=current,
            to_state=step.to_state,
            reason=step.reason,
        )
    return True


def record_received(submission: Submission) -> None:
    SubmissionEvent.objects.create(
        submission=submission, actor=submission.submitter, from_state="", to_state=states.RECEIVED
    )


# --- validation jobs (the patterns of registry_site.jobs) ---------------------------

ATTEMPTS_EXHAUSTED = "validation.attempts-exhausted"


@dataclass(frozen=True)
class Claim:
    """What `claim_validation` decided: run it ("claimed"), or why not."""

    outcome: str  # "claimed" | "busy" | "decided" | "missing" | "exhausted"
    attempt: int = 0


def claim_validation(submission_id, task_id: str, *, heartbeat_timeout_s: float, max_attempts: int) -> Claim:
    """Take the submission for validation by task `task_id`, counting one attempt.

    Claimable: `received`; or `validating` when the claim is this same task
    (its message was redelivered because the worker died) or the holder's
    heartbeat is stale. When the attempts are used up the submission ends
    `failed` with ATTEMPTS_EXHAUSTED instead.
    """
    from registry_site import jobs

    with transaction.atomic():
        row = (
            Submission.objects.filter(pk=submission_id)
            .values("state", "validation_attempts", "validation_task_id")
            .first()
        )
        if row is None:
            return Claim("missing")
        if row["state"] not in (states.RECEIVED, states.VALIDATING):
            return Claim("decided")
        claimable = Q(state=states.RECEIVED) | Q(state=states.VALIDATING, validation_task_id=task_id) | (
            Q(state=states.VALIDATING) & jobs.is_stale("heartbeat_at", heartbeat_timeout_s)
        )
        mine = Submission.objects.filter(claimable, pk=submission_id, state=row["state"])
        if not mine.exists():
            return Claim("busy")
        if row["validation_attempts"] >= max_attempts:
            end_failed(
                submission_id,
                (row["state"],),
                ATTEMPTS_EXHAUSTED,
                f"validation did not finish in {max_attempts} attempts (the worker stopped or the server "
                "failed each time); the bundle was not judged. You may submit the same archive again.",
            )
            return Claim("exhausted", row["validation_attempts"])
        now = timezone.now()
        changed = mine.filter(validation_attempts=row["validation_attempts"]).update(
            state=states.VALIDATING,
            validation_task_id=task_id,
            heartbeat_at=now,
            validating_since=now,
            validation_attempts=F("validation_attempts") + 1,
            updated_at=now,
        )
        if changed != 1:
            return Claim("busy")
        if row["state"] != states.VALIDATING:
            SubmissionEvent.objects.create(submission_id=submission_id, from_state=row["state"], to_state=states.VALIDATING)
    return Claim("claimed", row["validation_attempts"] + 1)


def end_failed(submission_id, from_states: tuple[str, ...], code: str, message: str) -> bool:
    """End a submission `failed` (not judged), with a report carrying `code`; emails the submitter."""
    from submissions import emails

    report = {"ok": False, "error_count": 1, "checks": {},
              "findings": [{"code": code, "message": message, "path": None, "line": None, "severity": "error"}]}
    with transaction.atomic():
        moved = apply_transition(
            Transition(submission_id, from_states, states.FAILED, reason=f"{code}: {message}"),
            validation_report=report,
            heartbeat_at=None,
        )
        if moved:
            emails.send_validation_outcome(Submission.objects.get(pk=submission_id))
    return moved


def hand_back(submission_id, reason: str, *, task_id: str | None = None) -> bool:
    """`validating` → `received`, for a retry (server error) or a dead worker (the reaper)."""
    step = Transition(submission_id, (states.VALIDATING,), states.RECEIVED, reason=reason)
    if task_id is None:
        return apply_transition(step, heartbeat_at=None, validating_since=None, validation_task_id="")
    with transaction.atomic():
        if not Submission.objects.filter(pk=submission_id, validation_task_id=task_id).exists():
            return False
        return apply_transition(step, heartbeat_at=None, validating_since=None, validation_task_id="")


def mark_dispatched(submission_id) -> None:
    Submission.objects.filter(pk=submission_id).update(dispatched_at=timezone.now())


def dispatch_validation(submission_id) -> bool:
    """Hand the validation message to the broker; False (logged) when the broker is unreachable.

    The submission row is the outbox: `dispatched_at` stays null until a send
    succeeds, and the reaper sends every `received` row that has none.
    """
    import logging

    from kombu.exceptions import OperationalError as BrokerUnavailable

    from registry_site.task_names import VALIDATE_SUBMISSION, task

    try:
        task(VALIDATE_SUBMISSION).delay(str(submission_id))
    except (BrokerUnavailable, ConnectionError) as exc:  # the row is committed; the reaper sends it
        # One line, no traceback: during a broker outage every upload says this, and the cause is the broker.
        logging.getLogger(__name__).warning("could not queue validation of %s; the reaper will (%s: %s)",
                                            submission_id, type(exc).__name__, exc)
        return False
    mark_dispatched(submission_id)
    return True
