"""Operator decisions: approve (and publish) or reject with a reason."""

from __future__ import annotations

from django.db import transaction

from registry_site.publishing import publish
from submissions import emails, states
from submissions.models import Submission
from submissions.runqueue.reproduction import check_reproductions
from submissions.services import Transition, apply_transition


class DecisionError(ValueError):
    pass


def approve(submission_id, operator) -> bool:
    """True when this call approved it; False when someone else decided first."""
    with transaction.atomic():
        moved = apply_transition(
            Transition(submission_id, (states.QUARANTINED,), states.APPROVED, actor=operator),
            decided_by=operator,
        )
        if moved:
            submission = Submission.objects.get(pk=submission_id)
            check_reproductions(submission, publish(submission), actor=operator)
    if moved:
        emails.send_decision(Submission.objects.get(pk=submission_id))
    return moved


def reject(submission_id, operator, reason: str) -> bool:
    reason = (reason or "").strip()
    if not reason:
        raise DecisionError("a rejection needs a reason; the submitter reads it")
    moved = apply_transition(
        Transition(submission_id, (states.QUARANTINED,), states.REJECTED, actor=operator, reason=reason),
        decided_by=operator,
        decision_reason=reason,
    )
    if moved:
        emails.send_decision(Submission.objects.get(pk=submission_id))
    return moved
