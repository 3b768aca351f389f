import io
import tarfile
from datetime import timedelta

from django.core import mail
from django.utils import timezone

from submissions import states
from submissions.intake import receive_upload
from submissions.models import Submission
from submissions.tasks import reap_stuck_validations, validate_submission


def _tar_with(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def test_it_marks_a_zip_slip_archive_invalid_and_says_why(submitter, django_capture_on_commit_callbacks):
    data = _tar_with({"../escape.txt": b"owned"})
    with django_capture_on_commit_callbacks(execute=True):
        submission = receive_upload(submitter, "evil.tar.gz", data)
    submission.refresh_from_db()
    assert submission.state == states.INVALID
    assert submission.error_codes()
    assert not submission.files.exists()
    failed = [m for m in mail.outbox if "failed validation" in m.subject]
    assert len(failed) == 1
    assert submission.error_codes()[0] in failed[0].body


def test_it_is_idempotent_when_the_message_is_delivered_twice(submit, bundle_archive):
    submission = submit(bundle_archive())
    assert validate_submission(str(submission.pk)) == states.QUARANTINED
    files = submission.files.count()
    assert validate_submission(str(submission.pk)) == states.QUARANTINED
    assert submission.files.count() == files
    assert Submission.objects.get(pk=submission.pk).events.filter(to_state=states.QUARANTINED).count() == 1


def test_it_finishes_a_validation_a_dead_worker_left_behind(submit, bundle_archive):
    submission = submit(bundle_archive())
    # what a worker killed mid-validation leaves: state validating, no result
    Submission.objects.filter(pk=submission.pk).update(
        state=states.VALIDATING, validating_since=timezone.now() - timedelta(hours=1)
    )
    assert reap_stuck_validations() == 1  # eager mode: re-queued and validated at once
    submission.refresh_from_db()
    assert submission.state == states.QUARANTINED
    assert submission.events.filter(to_state=states.QUARANTINED).count() == 1


def test_it_leaves_fresh_validations_alone(submit, bundle_archive):
    submission = submit(bundle_archive())
    Submission.objects.filter(pk=submission.pk).update(state=states.VALIDATING, validating_since=timezone.now())
    assert reap_stuck_validations() == 0


def test_it_sends_again_an_upload_whose_message_was_lost(submit, bundle_archive):
    submission = submit(bundle_archive())  # on_commit never ran: as if the broker lost the message
    Submission.objects.filter(pk=submission.pk).update(created_at=timezone.now() - timedelta(hours=1))
    assert reap_stuck_validations() == 1
    submission.refresh_from_db()
    assert submission.state == states.QUARANTINED
