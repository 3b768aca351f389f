import pytest
from django.core import mail

from submissions import states
from submissions.intake import UploadRefused, receive_upload
from submissions.models import Submission


def test_it_validates_a_real_bundle_into_quarantine(submit, bundle_archive, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        submission = submit(bundle_archive())
    submission.refresh_from_db()
    assert submission.state == states.QUARANTINED
    assert submission.validation_report["ok"] is True
    paths = sorted(f.path.rsplit("/", 1)[-1] for f in submission.files.all())
    assert "run.jsonl" in paths and "hardware.json" in paths
    assert [e.to_state for e in submission.events.all()] == ["received", "validating", "quarantined"]
    assert [m.subject for m in mail.outbox] == [f"[Benchpack] Submission received: {submission.archive_name}"]


def test_it_refuses_an_unverified_user(make_user, bundle_archive):
    user = make_user("unverified@example.org", verified=False)
    archive = bundle_archive()
    with pytest.raises(UploadRefused) as refused:
        receive_upload(user, archive.name, archive.read_bytes())
    assert refused.value.status == 403
    assert Submission.objects.count() == 0


def test_it_refuses_other_file_types(submitter):
    with pytest.raises(UploadRefused) as refused:
        receive_upload(submitter, "results.rar", b"Rar!")
    assert ".tar.gz or .zip" in refused.value.message


def test_it_refuses_oversized_archives(submitter, settings):
    settings.SUBMISSION_MAX_BYTES = 10
    with pytest.raises(UploadRefused) as refused:
        receive_upload(submitter, "big.tar.gz", b"x" * 11)
    assert refused.value.status == 413
    assert "10-byte limit" in refused.value.message


def test_it_answers_a_duplicate_with_the_existing_submission(submit, bundle_archive):
    archive = bundle_archive()
    first = submit(archive)
    with pytest.raises(UploadRefused) as refused:
        submit(archive)
    assert refused.value.status == 409
    assert refused.value.existing.pk == first.pk
    assert Submission.objects.count() == 1


def test_it_does_not_reveal_another_users_duplicate(submit, bundle_archive, make_user):
    archive = bundle_archive()
    submit(archive)
    other = make_user("bob@example.org")
    with pytest.raises(UploadRefused) as refused:
        submit(archive, user=other)
    assert refused.value.existing is None
    assert "someone else" in refused.value.message


def test_it_rate_limits_per_user(submit, bundle_archive, settings):
    settings.SUBMISSION_RATE_LIMIT_PER_HOUR = 1
    submit(bundle_archive("2026-04-29-llama-server-smoke"))
    with pytest.raises(UploadRefused) as refused:
        submit(bundle_archive("2026-04-28-mlx-lm-smoke"))
    assert refused.value.status == 429
