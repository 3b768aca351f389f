"""Operator decisions: approve (and publish) or reject with a reason.

Four eyes: an operator may not approve a submission of their own while the
site has another operator to do it. A site with a single operator (a fresh
install, the demo) has nobody else, so there it is allowed and the review
page says so.
"""

from __future__ import annotations

from django.db import transaction

from accounts.operators import operator_count
from registry_site.publishing import publish
from submissions import emails, states
from submissions.models import Submission
from submissions.services import Transition, apply_transition


class DecisionError(ValueError):
    pass


def self_approval_refusal(submission: Submission, operator) -> str | None:
    """Why `operator` may not approve `submission`, or None when they may."""
    if submission.submitter_id != operator.pk:
        return None
    if operator_count() <= 1:
        return None
    return "you submitted this bundle; another operator must approve it"


def approve(submission_id, operator) -> bool:
    """True when this call approved it; False when someone else decided first.

    Raises DecisionError when the operator may not approve it (their own submission).
    """
    submission = Submission.objects.defer("archive").filter(pk=submission_id).first()
    if submission is None:
        return False
    refusal = self_approval_refusal(submission, operator)
    if refusal:
        raise DecisionError(refusal)
    with transaction.atomic():
        moved = apply_transition(
            Transition(submission_id, (states.QUARANTINED,), states.APPROVED, actor=operator),
            decided_by=operator,
        )
        if moved:
            approved = Submission.objects.get(pk=submission_id)
            publish(approved)
            emails.send_decision(approved)  # queued in this transaction; a worker delivers it
    return moved


def reject(submission_id, operator, reason: str) -> bool:
    reason = (reason or "").strip()
    if not reason:
        raise DecisionError("a rejection needs a reason; the submitter reads it")
    with transaction.atomic():
        moved = apply_transition(
            Transition(submission_id, (states.QUARANTINED,), states.REJECTED, actor=operator, reason=reason),
            decided_by=operator,
            decision_reason=reason,
        )
        if moved:
            emails.send_decision(Submission.objects.get(pk=submission_id))
    return moved
