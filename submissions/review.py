"""Operator decisions: approve (and publish) or reject with a reason.

Four eyes: an operator may not approve a submission of their own while the
site has another operator to do it. A site with a single operator (a fresh
install, the demo) has nobody else, so there it is allowed and the review
page says so.
"""

from __future__ import annotations

import unicodedata

from django.db import transaction

from accounts.operators import operator_count
from benchpack.results.plausibility import IMPLAUSIBLE, UNCHECKED
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


# An operator's written reason to publish a submission with an implausible or unchecked run is a
# SubmissionEvent whose reason starts with this (the state does not change: the event is the audit trail).
PLAUSIBILITY_OVERRIDE = "plausibility override: "
# Unchecked is not plausible: a run no bound could check needs a written reason as an implausible one does.
NEEDS_REASON = (IMPLAUSIBLE, UNCHECKED)
# Letters that render as nothing (Hangul fillers, braille blank): Unicode calls them letters or symbols.
_BLANK_LETTERS = frozenset("\u115f\u1160\u3164\uffa0\u2800")


def written_reason(text: str | None, what: str) -> str:
    """The reason as kept, or DecisionError when it is not words: after dropping whitespace, format
    characters (U+200B zero-width space, U+200C/D joiners, U+2060, U+FEFF, soft hyphen — category Cf)
    and blank letters, at least one letter or digit must remain."""
    text = (text or "").strip()
    visible = [c for c in text if unicodedata.category(c) != "Cf" and not c.isspace() and c not in _BLANK_LETTERS]
    if not any(c.isalnum() for c in visible):
        raise DecisionError(f"{what} needs a written reason in words (whitespace or invisible characters "
                            f"are not one); it is kept with the submission")
    return text


def runs_needing_reason(submission: Submission) -> dict[str, tuple[str, str]]:
    """{run label: (verdict, why)} for every run judged implausible (a figure breaks a physical bound) or
    unchecked (no bound could be computed), judged from the stored files exactly as publishing judges them."""
    found = {}
    for result in result_dirs_of(submission):
        _, summary = judge(result)
        if summary["verdict"]["status"] in NEEDS_REASON:
            found[str(result.path)] = (summary["verdict"]["status"], summary["verdict"]["reason"])
    return found


def implausible_runs(submission: Submission) -> dict[str, str]:
    """{run label: why} for every run of the submission whose rows break a physical bound."""
    return {label: why for label, (status, why) in runs_needing_reason(submission).items() if status == IMPLAUSIBLE}


def plausibility_override(submission: Submission) -> SubmissionEvent | None:
    return submission.events.filter(reason__startswith=PLAUSIBILITY_OVERRIDE).order_by("-created_at", "-pk").first()


def override_plausibility(submission_id, operator, reason: str) -> bool:
    """Record an operator's written reason to publish despite an implausible or unchecked run; True when
    recorded."""
    reason = written_reason(reason, "an override")
    submission = Submission.objects.defer("archive").filter(pk=submission_id, state=states.QUARANTINED).first()
    if submission is None:
        return False
    if not runs_needing_reason(submission):
        raise DecisionError("every run of this submission is plausible: there is nothing to override")
    SubmissionEvent.objects.create(submission=submission, actor=operator, from_state=submission.state,
                                   to_state=submission.state, reason=PLAUSIBILITY_OVERRIDE + reason)
    return True


def approve(submission_id, operator) -> bool:
    """True when this call approved it; False when someone else decided first.

    Raises DecisionError when the operator may not approve it (their own submission), or when
    a run is implausible or unchecked and no operator has recorded a written reason to publish it.
    """
    submission = Submission.objects.defer("archive").filter(pk=submission_id).first()
    if submission is None:
        return False
    refusal = self_approval_refusal(submission, operator)
    if refusal:
        raise DecisionError(refusal)
    if submission.state == states.QUARANTINED and plausibility_override(submission) is None:
        needing = runs_needing_reason(submission)
        if needing:
            label, (status, why) = next(iter(needing.items()))
            raise DecisionError(f"run {label!r} is {status} ({why}); publishing it needs an operator's "
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


def approve_with_reason(submission_id, operator, reason: str) -> bool:
    """Approve, first recording `reason` as the written override when a run is implausible or unchecked
    (the demo's scripted runs: "demo data from a scripted endpoint"). The reason must be words."""
    reason = written_reason(reason, "an override")
    submission = Submission.objects.defer("archive").filter(pk=submission_id).first()
    if (submission is not None and submission.state == states.QUARANTINED and plausibility_override(submission) is None
            and runs_needing_reason(submission)):
        override_plausibility(submission_id, operator, reason)
    return approve(submission_id, operator)


def reject(submission_id, operator, reason: str) -> bool:
    reason = written_reason(reason, "a rejection")  # the submitter reads it
    with transaction.atomic():
        moved = apply_transition(
            Transition(submission_id, (states.QUARANTINED,), states.REJECTED, actor=operator, reason=reason),
            decided_by=operator,
            decision_reason=reason,
        )
        if moved:
            emails.send_decision(Submission.objects.get(pk=submission_id))
    return moved
