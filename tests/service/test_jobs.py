"""The reusable job helpers of registry_site.jobs, on a real model and database."""

from __future__ import annotations

import errno
import sqlite3
import time
from datetime import timedelta

import pytest
from django.db import OperationalError
from django.utils import timezone

from registry_site import jobs
from submissions.models import Submission


def test_take_attempt_counts_in_the_row_and_stops_at_the_cap(submit, bundle_archive):
    submission = submit(bundle_archive())
    row = Submission.objects.filter(pk=submission.pk)
    assert [jobs.take_attempt(row, "validation_attempts", 3) for _ in range(5)] == [True, True, True, False, False]
    assert row.get().validation_attempts == 3


@pytest.mark.django_db(transaction=True)
def test_heartbeat_writes_while_the_block_runs_and_stops_after(submit, bundle_archive):
    submission = submit(bundle_archive())
    row = Submission.objects.filter(pk=submission.pk)
    row.update(heartbeat_at=timezone.now() - timedelta(hours=1))
    assert row.filter(jobs.is_stale("heartbeat_at", 30)).exists()
    with jobs.heartbeat(row, "heartbeat_at", every_s=0.2):
        time.sleep(0.7)
        assert not row.filter(jobs.is_stale("heartbeat_at", 30)).exists()
    last = row.get().heartbeat_at
    time.sleep(0.5)
    assert row.get().heartbeat_at == last  # the thread is gone


@pytest.mark.parametrize(
    "exc, expected, described",
    [
        (OSError(errno.ENOSPC, "No space left on device"), True, "disk full (ENOSPC)"),
        (OSError(errno.EIO, "Input/output error"), True, "I/O error (EIO)"),
        (MemoryError(), True, "out of memory"),
        (OperationalError("database is locked"), True, "database busy or unreachable"),
        (OSError(errno.ENOENT, "No such file"), False, "I/O error (ENOENT)"),
        (ValueError("bad bundle"), False, "ValueError"),
        (sqlite3.IntegrityError("x"), False, "IntegrityError"),
    ],
)
def test_infrastructure_errors_are_told_from_verdicts(exc, expected, described):
    assert jobs.is_infrastructure_error(exc) is expected
    assert jobs.describe_error(exc) == described


def test_retry_countdown_backs_off_and_is_capped():
    assert 4 <= jobs.retry_countdown(1) <= 6
    assert 8 <= jobs.retry_countdown(2) <= 12
    assert jobs.retry_countdown(30) <= 300 * 1.2
