from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models

from submissions import states
from submissions.querysets import SubmissionQuerySet

from benchpack.results.provenance import CLAIMS

# The bundle's claim (kept, shown as "claimed"); the published provenance is
# earned by the server (registry_site.catalogue.publishing, benchpack.results.provenance).
PROVENANCE_CHOICES = [(claim, claim) for claim in CLAIMS]


class Submission(models.Model):
    # A random id: a guessed URL finds nothing, and visibility is still checked.
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    submitter = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="submissions")
    state = models.CharField(max_length=16, choices=states.CHOICES, default=states.RECEIVED, db_index=True)
    archive_name = models.CharField(max_length=255)
    # Unique among submissions that were judged (see Meta): bytes whose validation
    # failed for reasons of the server (`failed`) may be sent again.
    archive_sha256 = models.CharField(max_length=64, db_index=True)
    archive_size = models.PositiveBigIntegerField()
    # The upload itself, kept in the database (D-032); extraction is temporary.
    # Emptied when validation finds a credential in it (the hash and finding stay).
    archive = models.BinaryField()
    provenance = models.CharField(max_length=32, choices=PROVENANCE_CHOICES, blank=True)
    validation_report = models.JSONField(null=True, blank=True)
    summary = models.JSONField(null=True, blank=True)
    decision_reason = models.TextField(blank=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    is_demo = models.BooleanField(default=False)
    validation_attempts = models.PositiveIntegerField(default=0)
    validating_since = models.DateTimeField(null=True, blank=True)
    # The job pattern of registry_site.jobs: which task holds the validation, its
    # last sign of life, and when the validation message reached the broker
    # (null: not yet, e.g. the broker was down; the reaper sends it).
    validation_task_id = models.CharField(max_length=64, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    dispatched_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = SubmissionQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        permissions = [("review_submission", "Can approve or reject quarantined submissions")]
        constraints = [
            models.UniqueConstraint(
                fields=["archive_sha256"], condition=~models.Q(state=states.FAILED), name="unique_judged_archive_sha256"
            )
        ]

    def __str__(self) -> str:
        return f"{self.archive_name} ({self.state})"

    @property
    def is_final(self) -> bool:
        return self.state in states.FINAL

    @property
    def archive_discarded(self) -> bool:
        """The bytes were deleted because validation found a credential in them."""
        return self.state == states.INVALID and any(code.startswith("secret.") for code in self.error_codes())

    def error_codes(self) -> list[str]:
        findings = (self.validation_report or {}).get("findings", [])
        return sorted({f["code"] for f in findings if f.get("severity", "error") == "error"})


class SubmissionEvent(models.Model):
    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="events")
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT)
    from_state = models.CharField(max_length=16, blank=True)
    to_state = models.CharField(max_length=16)
    reason = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "pk"]


class SubmissionFile(models.Model):
    """A compact artifact of a validated bundle (run.jsonl, hardware.json, …)."""

    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="files")
    run_label = models.CharField(max_length=255)
    path = models.CharField(max_length=1024)
    role = models.CharField(max_length=64)
    sha256 = models.CharField(max_length=64)
    size = models.PositiveBigIntegerField()
    content = models.TextField()

    class Meta:
        ordering = ["path"]
        constraints = [models.UniqueConstraint(fields=["submission", "path"], name="unique_submission_file_path")]


class QueuedEmail(models.Model):
    """An email waiting for a worker to deliver it (submissions.mailqueue).

    Written by the queueing email backend inside the caller's transaction, so a
    state change and its email commit together; delivered by
    `submissions.tasks.deliver_queued_email` with EMAIL_DELIVERY_BACKEND.
    """

    message = models.BinaryField()  # the EmailMessage as UTF-8 JSON (submissions.mailqueue.message_to_json)
    recipients = models.TextField()  # for the admin and logs
    subject = models.CharField(max_length=998)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    claimed_at = models.DateTimeField(null=True, blank=True)
    sent_at = models.DateTimeField(null=True, blank=True, db_index=True)
    attempts = models.PositiveIntegerField(default=0)
    last_error = models.CharField(max_length=255, blank=True)

    class Meta:
        ordering = ["created_at", "pk"]

    def __str__(self) -> str:
        return f"{self.subject} -> {self.recipients}"


# The run queue's models live in their own module; importing them here registers them with this app.
from submissions.runqueue.models import (  # noqa: E402,F401
    HostEndpoint,
    HostPack,
    Reproduction,
    RunnerHost,
    RunRequest,
    RunRequestEvent,
    RunRequestRow,
)
