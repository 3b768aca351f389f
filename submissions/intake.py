"""Accepting an upload: who may submit, size, type, rate, duplicates."""

from __future__ import annotations

import hashlib
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts.operators import has_verified_email
from benchpack.bundles import archives
from submissions import emails
from submissions.models import Submission
from submissions.services import dispatch_validation, record_received


class UploadRefused(Exception):
    def __init__(self, message: str, status: int = 400, existing: Submission | None = None):
        super().__init__(message)
        self.message = message
        self.status = status
        self.existing = existing


def receive_upload(user, archive_name: str, data: bytes, *, is_demo: bool = False) -> Submission:
    if not has_verified_email(user):
        raise UploadRefused("verify your email address before submitting results", status=403)
    try:
        archives.archive_kind(Path(archive_name))
    except archives.ArchiveError:
        raise UploadRefused(
            f"{archive_name}: the archive must be a .tar.gz or .zip file (made by `benchpack registry bundle pack`)"
        ) from None
    if len(data) > settings.SUBMISSION_MAX_BYTES:
        raise UploadRefused(
            f"{archive_name}: {len(data)} bytes is over the {settings.SUBMISSION_MAX_BYTES}-byte limit; "
            "bundles carry compact artifacts only",
            status=413,
        )
    if not data:
        raise UploadRefused(f"{archive_name}: the file is empty")
    digest = hashlib.sha256(data).hexdigest()
    existing = Submission.objects.judged_with_sha256(digest).first()
    if existing is not None:
        raise _duplicate(user, existing)
    try:
        with transaction.atomic():
            _check_rate_limit(user)
            submission = Submission.objects.create(
                submitter=user,
                archive_name=archive_name[:255],
                archive_sha256=digest,
                archive_size=len(data),
                archive=data,
                is_demo=is_demo,
            )
            record_received(submission)
            emails.send_received(submission)  # queued in this transaction, delivered by a worker
            transaction.on_commit(lambda: dispatch_validation(submission.pk), robust=True)
    except IntegrityError:
        existing = Submission.objects.judged_with_sha256(digest).first()
        if existing is None:
            raise
        raise _duplicate(user, existing) from None
    return submission


def _check_rate_limit(user) -> None:
    """Count and insert atomically: the user's row is locked for the rest of the
    transaction (PostgreSQL), and SQLite's IMMEDIATE transactions hold the write
    lock from BEGIN, so concurrent uploads of one user are counted one by one."""
    get_user_model().objects.select_for_update().filter(pk=user.pk).first()
    hour_ago = timezone.now() - timedelta(hours=1)
    recent = Submission.objects.filter(submitter=user, created_at__gte=hour_ago).count()
    if recent >= settings.SUBMISSION_RATE_LIMIT_PER_HOUR:
        raise UploadRefused(
            f"you have submitted {recent} bundles in the last hour; the limit is "
            f"{settings.SUBMISSION_RATE_LIMIT_PER_HOUR}. Try again later.",
            status=429,
        )


def _duplicate(user, existing: Submission) -> UploadRefused:
    if existing.submitter_id == user.pk:
        return UploadRefused(
            f"this archive was already submitted on {existing.created_at:%Y-%m-%d %H:%M} UTC "
            f"(state: {existing.state})",
            status=409,
            existing=existing,
        )
    return UploadRefused("this archive was already submitted by someone else", status=409)
