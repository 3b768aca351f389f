"""Celery tasks: validate an uploaded bundle; recover validations; deliver queued email.

`validate_submission` follows registry_site.jobs: it claims the submission
with a conditional UPDATE (recording its task id and counting one attempt in
the row), writes a heartbeat while it works, and ends it in one state exactly
once. A redelivered message (acks_late, the worker died) takes its own claim
back at once; a bundle whose worker dies every time ends `failed` when
SUBMISSION_MAX_VALIDATION_ATTEMPTS are used up. Infrastructure errors (disk
full, a locked database) are not verdicts on the bundle: the submission goes
back to `received` and the task is retried with backoff, within the same
attempt budget.

`reap_stuck_validations` runs every SUBMISSION_REAPER_INTERVAL_S from beat
(the demo's worker embeds beat): it hands back validations whose heartbeat
went silent and sends the validation message of uploads that never reached
the broker (or whose message was lost).
"""

from __future__ import annotations

import logging
import os
import signal
import time
from datetime import timedelta

from celery import shared_task
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from registry_site import jobs
from submissions import emails, mailqueue, states
from submissions.models import Submission
from submissions.services import (
    Transition,
    apply_transition,
    claim_validation,
    dispatch_validation,
    end_failed,
    hand_back,
)
from submissions.validation import validate_archive

log = logging.getLogger(__name__)

# Uploads get this long to reach the broker from their own request before the reaper sends them.
DISPATCH_GRACE = timedelta(seconds=5)


@shared_task(bind=True, acks_late=True, reject_on_worker_lost=True, ignore_result=True, max_retries=None)
def validate_submission(self, submission_id: str) -> str:
    task_id = self.request.id or f"inline-{os.getpid()}"
    try:
        claim = claim_validation(
            submission_id,
            task_id,
            heartbeat_timeout_s=settings.SUBMISSION_HEARTBEAT_TIMEOUT_S,
            max_attempts=settings.SUBMISSION_MAX_VALIDATION_ATTEMPTS,
        )
    except Exception as exc:
        if not jobs.is_transient_database_error(exc):
            raise
        # still locked after the busy timeout (or a dropped connection): nothing claimed, try again
        raise self.retry(exc=exc, countdown=jobs.retry_countdown(self.request.retries + 1)) from None
    if claim.outcome == "decided":  # a redelivered message after the end: nothing to do
        return Submission.objects.filter(pk=submission_id).values_list("state", flat=True).first()
    if claim.outcome != "claimed":
        return claim.outcome  # "busy" (a live worker has it), "exhausted" (ended failed), "missing"
    submission = Submission.objects.get(pk=submission_id)
    mine = Submission.objects.filter(pk=submission_id, state=states.VALIDATING, validation_task_id=task_id)
    try:
        with jobs.heartbeat(mine, "heartbeat_at", every_s=settings.SUBMISSION_HEARTBEAT_S):
            _test_only_faults()
            outcome = validate_archive(submission.archive_name, bytes(submission.archive), archive_limits(), bundle_limits())
        return _record_outcome(submission, outcome)
    except Exception as exc:
        if not jobs.is_infrastructure_error(exc):
            raise
        what = jobs.describe_error(exc)
        log.warning("validation of %s met a server error (%s); retrying", submission_id, what)
        if claim.attempt >= settings.SUBMISSION_MAX_VALIDATION_ATTEMPTS:
            if jobs.is_out_of_space(exc):
                # Said plainly, and `failed` (not judged): the same archive may be sent again.
                end_failed(submission_id, (states.VALIDATING,), "validation.out-of-space",
                           f"the registry ran out of space ({what}) in each of {claim.attempt} attempts; the "
                           "bundle was not judged. Resubmit later: the same archive may be sent again.")
            else:
                end_failed(submission_id, (states.VALIDATING,), "validation.server-error",
                           f"validation met a server error ({what}) in each of {claim.attempt} attempts; the bundle "
                           "was not judged. You may submit the same archive again.")
            return states.FAILED
        hand_back(submission_id, f"server error during validation ({what}); retrying", task_id=task_id)
        raise self.retry(exc=exc, countdown=jobs.retry_countdown(claim.attempt)) from None


def _record_outcome(submission: Submission, outcome) -> str:
    if outcome.ok:
        outcome = _against_evidence(submission, outcome)
    to_state = states.QUARANTINED if outcome.ok else states.INVALID
    extra = {}
    if outcome.holds_secret:
        extra["archive"] = b""  # never keep the bytes of an archive refused for a credential
    with transaction.atomic():
        moved = apply_transition(
            Transition(submission.pk, (states.VALIDATING,), to_state, reason=outcome.reason),
            validation_report=outcome.report,
            summary=outcome.summary,
            provenance=outcome.provenance or "",
            heartbeat_at=None,
            **extra,
        )
        if moved:
            submission.files.all().delete()
            submission.files.bulk_create(outcome.file_rows(submission))
            submission.refresh_from_db()
            emails.send_validation_outcome(submission)  # queued in this transaction
    return to_state


def _against_evidence(submission: Submission, outcome):
    """A runner host's bundle must agree with the run request, the host's approved hardware and the rows
    streamed during the run (submissions.runqueue.evidence); otherwise it is refused, never reviewed."""
    from submissions.runqueue import evidence
    from submissions.validation import ValidationOutcome

    reason = evidence.refusal(submission, outcome.files)
    if reason is None:
        return outcome
    finding = {"code": evidence.CODE, "message": reason, "path": None, "line": None, "severity": "error"}
    report = {**outcome.report, "ok": False, "findings": [*outcome.report.get("findings", []), finding]}
    return ValidationOutcome(ok=False, report=report, reason=f"{evidence.CODE}: {reason}",
                             provenance=outcome.provenance, summary=outcome.summary)


def archive_limits():
    from benchpack.bundles.archives import ArchiveLimits

    return ArchiveLimits(
        max_total_bytes=settings.SUBMISSION_MAX_EXPANDED_BYTES,
        max_member_bytes=settings.SUBMISSION_MAX_EXPANDED_BYTES,
        max_ratio=float(settings.SUBMISSION_MAX_EXPANSION_RATIO),
    )


def bundle_limits():
    from benchpack.bundles.checks import BundleLimits

    return BundleLimits(
        max_file_bytes=settings.SUBMISSION_MAX_EXPANDED_BYTES,
        max_total_bytes=settings.SUBMISSION_MAX_EXPANDED_BYTES,
        max_rows_per_run=settings.SUBMISSION_MAX_ROWS_PER_RUN,
        max_cases_per_run=settings.SUBMISSION_MAX_CASES_PER_RUN,
        max_row_bytes=settings.SUBMISSION_MAX_ROW_BYTES,
    )


def _test_only_faults() -> None:
    """Let the fault tests catch a validation in flight or make its worker die; unset everywhere else."""
    delay = os.environ.get("BENCHPACK_TEST_VALIDATION_DELAY_S")
    if delay:
        time.sleep(float(delay))
    if os.environ.get("BENCHPACK_TEST_VALIDATION_CRASH") == "1":
        os.kill(os.getpid(), signal.SIGKILL)  # what the OOM killer or a crash in C does


def reaper_candidates(now=None) -> dict:
    """What the reaper would act on now: {"silent": …, "undispatched": …, "lost": …} querysets."""
    now = now or timezone.now()
    return {
        # validating, but the worker's heartbeat stopped: it died
        "silent": Submission.objects.filter(state=states.VALIDATING).filter(
            jobs.is_stale("heartbeat_at", settings.SUBMISSION_HEARTBEAT_TIMEOUT_S)
        ),
        # committed, but the message never reached the broker (it was down)
        "undispatched": Submission.objects.undispatched(now - DISPATCH_GRACE),
        # the message reached the broker long ago and nothing happened: it was lost
        "lost": Submission.objects.stuck_received(now - timedelta(seconds=settings.SUBMISSION_VALIDATING_TIMEOUT_S)),
    }


@shared_task(acks_late=True, ignore_result=True)
def reap_stuck_validations() -> int:
    """Hand back validations whose worker went silent; send uploads whose message never left or was lost."""
    candidates = reaper_candidates()
    requeued = 0
    for pk in candidates["silent"].values_list("pk", flat=True):
        if hand_back(pk, "the validation worker stopped answering; retrying"):
            dispatch_validation(pk)
            requeued += 1
    for kind in ("undispatched", "lost"):
        for pk in candidates[kind].values_list("pk", flat=True):
            if dispatch_validation(pk):
                requeued += 1
    if requeued:
        log.warning("requeued %d stuck validations", requeued)
    return requeued


@shared_task(acks_late=True, ignore_result=True)
def trim_invalid_archives() -> int:
    """Beat, hourly: refused archives keep their first bytes, hash, size and report (submissions.retention)."""
    from submissions.retention import trim_invalid_archives as trim

    return trim()


@shared_task(acks_late=True, ignore_result=True)
def deliver_queued_email() -> int:
    return mailqueue.deliver_pending()


__all__ = ["validate_submission", "reap_stuck_validations", "deliver_queued_email", "end_failed"]
