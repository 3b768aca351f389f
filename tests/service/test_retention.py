"""Refused archives keep what an operator needs (first bytes, hash, size, report) and lose the rest on the
beat schedule (issue 22 §3, submissions/retention.py)."""

from __future__ import annotations

import hashlib
import os
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from submissions import states
from submissions.models import Submission


def _submission(user, state, data: bytes, age_h: float) -> Submission:
    submission = Submission.objects.create(submitter=user, state=state, archive_name="x.tar.gz",
                                           archive_sha256=hashlib.sha256(data).hexdigest(), archive_size=len(data),
                                           archive=data, validation_report={"findings": [{"code": "archive.bad"}]})
    Submission.objects.filter(pk=submission.pk).update(updated_at=timezone.now() - timedelta(hours=age_h))
    return submission


def test_an_old_invalid_archive_keeps_its_head_hash_size_and_report(submitter):
    from submissions.tasks import trim_invalid_archives

    junk = os.urandom(200_000)
    old_invalid = _submission(submitter, states.INVALID, junk, age_h=25)
    fresh_invalid = _submission(submitter, states.INVALID, os.urandom(200_000), age_h=1)
    old_quarantined = _submission(submitter, states.QUARANTINED, os.urandom(200_000), age_h=25)
    assert trim_invalid_archives() == 1
    kept = Submission.objects.get(pk=old_invalid.pk)
    assert bytes(kept.archive) == junk[:4096]
    assert (kept.archive_sha256, kept.archive_size) == (hashlib.sha256(junk).hexdigest(), 200_000)
    assert kept.validation_report == {"findings": [{"code": "archive.bad"}]} and kept.state == states.INVALID
    assert len(bytes(Submission.objects.get(pk=fresh_invalid.pk).archive)) == 200_000  # time to look at it whole
    assert len(bytes(Submission.objects.get(pk=old_quarantined.pk).archive)) == 200_000  # never a live bundle's
    assert trim_invalid_archives() == 0  # nothing left to cut


def test_beat_runs_it_hourly():
    entry = settings.CELERY_BEAT_SCHEDULE["trim-invalid-archives"]
    assert entry == {"task": "submissions.tasks.trim_invalid_archives", "schedule": 3600.0}
