"""Operator decisions: approve (and publish) or reject with a reason.

Four eyes: an operator may not approve a submission of their own while the
site has another operator to do it. A site with a single operator (a fresh
install, the demo) has nobody else, so there it is allowed and the review
page says so.
"""

from __future__ import annotations

from django.db import transaction

from accounts.operators import operator_count
from benchpack.results.plausibility import IMPLAUSIBLE
from registry_site.catalogue.publishing import judge, publish
from submissions.publication import publication_of, result_dirs_of
from submissions import emails, states
from submissions.models import Submission, SubmissionEvent
from submissions.runqueue.reproduction import check_reproductions
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


# An operator's written reason to publish a submission with an implausible run is a SubmissionEvent
# whose reason starts with this (the state does not change: the event is the audit trail).
PLAUSIBILITY_OVERRIDE = "plausibility override: "


def implausible_runs(submission: Submission) -> dict[str, str]:
    """{run label: why} for every run of the submission whose rows break a physical bound
    (benchpack.results.plausibility), judged from the stored files exactly as publishing judges them."""
    found = {}
    for result in result_dirs_of(submission):
        _, summary = judge(result)
        if summary["verdict"]["status"] == IMPLAUSIBLE:
            found[str(result.path)] = summary["verdict"]["reason"]
    return found


def plausibility_override(submission: Submission) -> SubmissionEvent | None:
    return submission.events.filter(reason__startswith=PLAUSIBILITY_OVERRIDE).order_by("-created_at", "-pk").first()


def override_plausibility(submission_id, operator, reason: str) -> bool:
    """Record an operator's written reason to publish despite an implausible run; True when recorded."""
    reason = (reason or "").strip()
    if not reason:
        raise DecisionError("an override needs a written reason; it is kept with the submission")
    submission = Submission.objects.defer("archive").filter(pk=submission_id, state=states.QUARANTINED).first()
    if submission is None:
        return False
    if not implausible_runs(submission):
        raise DecisionError("no run of this submission is implausible: there is nothing to override")
    SubmissionEvent.objects.create(submission=submission, actor=operator, from_state=submission.state,
                                   to_state=submission.state, reason=PLAUSIBILITY_OVERRIDE + reason)
    return True


def approve(submission_id, operator) -> bool:
    """True when this call approved it; False when someone else decided first.

    Raises DecisionError when the operator may not approve it (their own submission), or when
    a run is implausible and no operator has overridden that with a written reason.
    """
    submission = Submission.objects.defer("archive").filter(pk=submission_id).first()
    if submission is None:
        return False
    refusal = self_approval_refusal(submission, operator)
    if refusal:
        raise DecisionError(refusal)
    if submission.state == states.QUARANTINED and plausibility_override(submission) is None:
        implausible = implausible_runs(submission)
        if implausible:
            label, why = next(iter(implausible.items()))
            raise DecisionError(f"run {label!r} is implausible ({why}); publishing it needs an operator's "
                                f"written override first")
    with transaction.atomic():
        moved = apply_transition(
            Transition(submission_id, (states.QUARANTINED,), states.APPROVED, actor=operator),
            decided_by=operator,
        )
        if moved:
            approved = Submission.objects.get(pk=submission_id)
            check_reproductions(approved, publish(publication_of(approved)), actor=operator)
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
