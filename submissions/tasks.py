"""Celery tasks: validate an uploaded bundle; hand back validations whose worker died.

Both are idempotent. `validate_submission` may run twice for one submission
(acks_late redelivers a message whose worker was killed): the work is
deterministic, compact files are replaced, and the final move out of
`validating` is a conditional UPDATE, so the submission ends in one state
exactly once and sends one email.
"""

from __future__ import annotations

import logging
import os
import time
from datetime import timedelta

from celery import shared_task
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from submissions import emails, states
from submissions.models import Submission
from submissions.services import Transition, apply_transition
from submissions.validation import validate_archive

log = logging.getLogger(__name__)


@shared_task(acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def validate_submission(submission_id: str) -> str:
    submission = Submission.objects.filter(pk=submission_id).first()
    if submission is None:
        return "missing"
    if submission.state == states.RECEIVED:
        apply_transition(
            Transition(submission.pk, (states.RECEIVED,), states.VALIDATING),
            validating_since=timezone.now(),
        )
    submission.refresh_from_db()
    if submission.state != states.VALIDATING:
        return submission.state  # decided already; a redelivered message does nothing
    Submission.objects.filter(pk=submission.pk).update(validation_attempts=submission.validation_attempts + 1)

    _test_only_pause()
    outcome = validate_archive(submission.archive_name, bytes(submission.archive))

    with transaction.atomic():
        to_state = states.QUARANTINED if outcome.ok else states.INVALID
        moved = apply_transition(
            Transition(submission.pk, (states.VALIDATING,), to_state, reason=outcome.reason),
            validation_report=outcome.report,
            summary=outcome.summary,
            provenance=outcome.provenance or "",
        )
        if moved:
            submission.files.all().delete()
            submission.files.bulk_create(outcome.file_rows(submission))
    if moved:
        submission.refresh_from_db()
        emails.send_validation_outcome(submission)
    return to_state


def _test_only_pause() -> None:
    """Lets the worker-kill test catch a validation in flight; unset everywhere else."""
    delay = os.environ.get("BENCHPACK_TEST_VALIDATION_DELAY_S")
    if delay:
        time.sleep(float(delay))


@shared_task(acks_late=True, ignore_result=True)
def reap_stuck_validations() -> int:
    """Submissions left in `validating` by a dead worker go back to the queue;
    uploads still `received` after the timeout (their message was lost) are sent again."""
    cutoff = timezone.now() - timedelta(seconds=settings.SUBMISSION_VALIDATING_TIMEOUT_S)
    requeued = 0
    for pk in Submission.objects.stuck_received(cutoff).values_list("pk", flat=True):
        validate_submission.delay(str(pk))
        requeued += 1
    for pk in Submission.objects.stuck_validating(cutoff).values_list("pk", flat=True):
        if apply_transition(
            Transition(pk, (states.VALIDATING,), states.RECEIVED, reason="validation worker did not finish; retrying"),
            validating_since=None,
        ):
            validate_submission.delay(str(pk))
            requeued += 1
    if requeued:
        log.warning("requeued %d stuck validations", requeued)
    return requeued
