"""State changes of submissions.

Every transition is one conditional UPDATE (`WHERE id = … AND state IN …`)
whose row count says whether this caller won; only the winner writes the
event row and sends email. Running the same step twice, or two operators
clicking at once, therefore changes nothing the second time.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction
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
