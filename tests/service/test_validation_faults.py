"""Faults during validation: a full disk, a worker that dies every time, a
credential in the archive. Server trouble is retried and never judged; the
attempts are capped in the database; a secret's bytes are not kept."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from django.core import mail
from django.utils import timezone

from submissions import states
from submissions.intake import receive_upload
from submissions.models import Submission
from submissions.services import ATTEMPTS_EXHAUSTED
from submissions.tasks import validate_submission
from tests.environment import unavailable


@pytest.fixture
def full_disk(tmp_path, monkeypatch):
    """Validation's temporary directory on a real 256 KiB tmpfs: writes fail with ENOSPC."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        unavailable("mounting a small tmpfs needs root and mount (CI runs as root)")
    folder = tmp_path / "small-disk"
    folder.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(folder)], capture_output=True)
    if mounted.returncode != 0:
        unavailable(f"cannot mount tmpfs here: {mounted.stderr.decode()[:200]}")
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    yield folder
    monkeypatch.setattr(tempfile, "tempdir", None)
    subprocess.run(["umount", "-l", str(folder)], check=False)


@pytest.fixture
def retries_run_inline():
    """Eager mode runs a task's retries at once, in-process, when errors do not propagate."""
    from registry_site.celery import app

    before = app.conf.task_eager_propagates
    app.conf.task_eager_propagates = False
    yield
    app.conf.task_eager_propagates = before


def test_a_full_disk_is_retried_never_judged_and_the_bytes_can_be_sent_again(
    submitter, bundle_archive, full_disk, settings, retries_run_inline
):
    # fill the small disk so that extraction meets ENOSPC, as a full /tmp would
    (full_disk / "filler").write_bytes(b"\0" * (256 * 1024 - 8192))
    archive = bundle_archive()
    data = archive.read_bytes()
    submission = receive_upload(submitter, archive.name, data)
    result = validate_submission.apply(args=[str(submission.pk)], throw=False)  # eager: its retries run inline
    submission.refresh_from_db()
    codes = submission.error_codes()
    assert submission.state == states.FAILED, (submission.state, codes, result.state)
    assert codes == ["validation.out-of-space"]
    message = submission.validation_report["findings"][0]["message"]
    assert "the registry ran out of space (disk full (ENOSPC))" in message and "Resubmit later" in message
    assert "archive.corrupt" not in codes
    assert submission.validation_attempts == settings.SUBMISSION_MAX_VALIDATION_ATTEMPTS
    reasons = [e.reason for e in submission.events.all()]
    assert sum("server error during validation (disk full (ENOSPC))" in r for r in reasons) == (
        settings.SUBMISSION_MAX_VALIDATION_ATTEMPTS - 1
    )
    assert any("could not be validated" in m.subject for m in mail.outbox)

    # the disk has room again: the same bytes are accepted and judged
    (full_disk / "filler").unlink()
    again = receive_upload(submitter, archive.name, data)
    assert again.pk != submission.pk
    assert validate_submission(str(again.pk)) == states.QUARANTINED


def test_a_full_disk_that_clears_between_attempts_ends_in_a_verdict(
    submitter, bundle_archive, full_disk, monkeypatch, retries_run_inline
):
    filler = full_disk / "filler"
    filler.write_bytes(b"\0" * (256 * 1024 - 8192))
    from submissions import services

    original = services.hand_back

    def free_space_then_hand_back(*args, **kwargs):
        filler.unlink(missing_ok=True)  # an operator cleaned up while the task waited for its retry
        return original(*args, **kwargs)

    monkeypatch.setattr("submissions.tasks.hand_back", free_space_then_hand_back)
    archive = bundle_archive()
    submission = receive_upload(submitter, archive.name, archive.read_bytes())
    validate_submission.apply(args=[str(submission.pk)], throw=False)
    submission.refresh_from_db()
    assert submission.state == states.QUARANTINED
    assert submission.validation_attempts == 2
    assert [e.to_state for e in submission.events.all()] == ["received", "validating", "received", "validating", "quarantined"]


def test_attempts_are_capped_in_the_database(submit, bundle_archive, settings):
    """What a bundle that kills its worker every time leaves: each redelivery
    claims it again and counts; past the cap it ends `failed`, not redelivered forever."""
    archive = bundle_archive()
    submission = submit(archive)
    Submission.objects.filter(pk=submission.pk).update(
        state=states.VALIDATING, validation_task_id="the-message", validation_attempts=settings.SUBMISSION_MAX_VALIDATION_ATTEMPTS
    )
    result = validate_submission.apply(args=[str(submission.pk)], task_id="the-message")
    assert result.get() == "exhausted"
    submission.refresh_from_db()
    assert submission.state == states.FAILED
    assert submission.error_codes() == [ATTEMPTS_EXHAUSTED]
    assert submission.validation_attempts == settings.SUBMISSION_MAX_VALIDATION_ATTEMPTS
    # not a verdict on the bytes: the same archive may be submitted again
    again = submit(archive)
    assert again.pk != submission.pk and again.state == states.RECEIVED


def test_a_redelivered_message_takes_its_own_claim_back_and_counts_it(submit, bundle_archive):
    submission = submit(bundle_archive())
    Submission.objects.filter(pk=submission.pk).update(
        state=states.VALIDATING, validation_task_id="the-message", validation_attempts=1, heartbeat_at=timezone.now()
    )
    # another message meets a live claim and leaves it alone
    assert validate_submission.apply(args=[str(submission.pk)], task_id="another").get() == "busy"
    # the same message again (its worker died): it carries on
    assert validate_submission.apply(args=[str(submission.pk)], task_id="the-message").get() == states.QUARANTINED
    submission.refresh_from_db()
    assert submission.validation_attempts == 2


def _tar_of_bundle(bundle_dir: Path) -> bytes:
    import io
    import tarfile

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for path in sorted(bundle_dir.rglob("*")):
            tar.add(path, arcname=path.relative_to(bundle_dir).as_posix(), recursive=False)
    return buffer.getvalue()


@pytest.mark.parametrize(
    "written",
    [
        r'"\u0073k-proj-abcdefghijklmnopqrstuvwxyz0123456789"',  # sk-… behind a \u escape
        r'"https:\/\/admin:hunter2hunter2@db.internal.example\/x"',  # a credentialed URL behind \/
    ],
    ids=["unicode-escape", "slash-escape"],
)
def test_a_secret_behind_json_escapes_is_refused_and_its_archive_not_kept(written, submitter, tmp_path, client):
    from tests.hostile import _put, template_bundle

    bundle = template_bundle(tmp_path / "t")
    _put(bundle, "run-metadata.json", ('{"runtime": {"name": "llama.cpp"}, "notes": ' + written + "}").encode())
    submission = receive_upload(submitter, "escaped.tar.gz", _tar_of_bundle(bundle))
    assert validate_submission(str(submission.pk)) == states.INVALID
    submission.refresh_from_db()
    assert any(code.startswith("secret.") for code in submission.error_codes())
    assert bytes(submission.archive) == b""  # only the hash and the finding stay
    assert len(submission.archive_sha256) == 64 and submission.archive_size > 0
    assert not submission.files.exists()
    client.force_login(submitter)
    assert b"The archive was deleted" in client.get(f"/submissions/{submission.pk}/").content


def test_a_task_that_meets_a_locked_database_is_retried(submit, bundle_archive, monkeypatch, retries_run_inline):
    from django.db import OperationalError

    from submissions import services

    calls = []
    original = services.claim_validation

    def locked_once(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise OperationalError("database is locked")
        return original(*args, **kwargs)

    monkeypatch.setattr("submissions.tasks.claim_validation", locked_once)
    submission = submit(bundle_archive())
    validate_submission.apply(args=[str(submission.pk)], throw=False)
    submission.refresh_from_db()
    assert len(calls) == 2
    assert submission.state == states.QUARANTINED and submission.validation_attempts == 1


def test_sqlite_keeps_its_temporary_files_in_memory_apart_from_the_scratch_space(db, settings):
    """A full scratch directory cannot fail the write that records the failure (issue 22 §3).

    SQLite's temporary files would share the scratch directory; PostgreSQL's live
    in its own data directory, so there the test checks that nothing is set."""
    from django.db import connection

    if connection.vendor != "sqlite":
        assert "init_command" not in connection.settings_dict.get("OPTIONS", {})
        return
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA temp_store")
        assert cursor.fetchone()[0] == 2  # MEMORY
    assert "PRAGMA temp_store=MEMORY" in settings.DATABASES["default"]["OPTIONS"]["init_command"]


def test_validation_extracts_in_the_configured_scratch_directory(tmp_path, settings, monkeypatch, bundle_archive):
    from submissions import validation

    settings.VALIDATION_SCRATCH_DIR = str(tmp_path / "scratch")
    (tmp_path / "scratch").mkdir()
    seen = []
    original = tempfile.TemporaryDirectory

    def spy(*args, **kwargs):
        seen.append(kwargs.get("dir"))
        return original(*args, **kwargs)

    monkeypatch.setattr(validation.tempfile, "TemporaryDirectory", spy)
    archive = bundle_archive()
    assert validation.validate_archive(archive.name, archive.read_bytes()).ok
    assert seen == [str(tmp_path / "scratch")]
