"""What is kept of an archive the registry refused (issue 22 §3).

An `invalid` submission's bytes were kept whole in the database (178 MiB of
refused junk after one afternoon of hostile uploads). An operator explaining
a refusal needs the report (its findings), the hash and size (to recognise
the file when it comes again) and the first bytes (what kind of file it was),
not the rest. `trim_invalid_archives` — run hourly by Celery beat
(`trim-invalid-archives`) — cuts the stored archive of every submission that
has been `invalid` for `INVALID_ARCHIVE_RETENTION_S` (default one day, time
to look at it whole) to its first `INVALID_ARCHIVE_KEEP_BYTES` (4 KiB).
`archive_sha256`, `archive_size` and `validation_report` are never touched;
an archive refused for a credential is emptied at once (submissions.tasks).
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db.models.functions import Length
from django.utils import timezone

from submissions import states
from submissions.models import Submission


def trim_candidates(now=None):
    now = now or timezone.now()
    cutoff = now - timedelta(seconds=settings.INVALID_ARCHIVE_RETENTION_S)
    return (Submission.objects.filter(state=states.INVALID, updated_at__lt=cutoff)
            .annotate(stored_bytes=Length("archive"))
            .filter(stored_bytes__gt=settings.INVALID_ARCHIVE_KEEP_BYTES))


def trim_invalid_archives(now=None) -> int:
    """Cut each long-invalid archive to its first bytes; returns how many were cut.

    One row at a time (each read whole once: at most SUBMISSION_MAX_BYTES in memory), each a conditional
    UPDATE that only applies while the row is still `invalid`.
    """
    keep = settings.INVALID_ARCHIVE_KEEP_BYTES
    trimmed = 0
    for pk in list(trim_candidates(now).values_list("pk", flat=True)):
        data = Submission.objects.filter(pk=pk).values_list("archive", flat=True).first()
        if data is None:
            continue
        head = bytes(data[:keep])
        trimmed += Submission.objects.filter(pk=pk, state=states.INVALID).update(archive=head)
    return trimmed
