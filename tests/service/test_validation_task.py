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


def test_it_finishes_a_validation_whose_worker_went_silent(submit, bundle_archive, settings):
    submission = submit(bundle_archive())
    # what a worker killed mid-validation leaves: state validating, a heartbeat that stopped
    silent_for = settings.SUBMISSION_HEARTBEAT_TIMEOUT_S + 1
    Submission.objects.filter(pk=submission.pk).update(
        state=states.VALIDATING, validating_since=timezone.now() - timedelta(hours=1),
        heartbeat_at=timezone.now() - timedelta(seconds=silent_for), validation_task_id="dead-task",
    )
    assert reap_stuck_validations() == 1  # eager mode: re-queued and validated at once
    submission.refresh_from_db()
    assert submission.state == states.QUARANTINED
    assert submission.events.filter(to_state=states.QUARANTINED).count() == 1


def test_it_leaves_validations_with_a_live_heartbeat_alone(submit, bundle_archive):
    submission = submit(bundle_archive())
    Submission.objects.filter(pk=submission.pk).update(
        state=states.VALIDATING, validating_since=timezone.now() - timedelta(hours=1), heartbeat_at=timezone.now(),
        dispatched_at=timezone.now(),
    )
    assert reap_stuck_validations() == 0


def test_it_sends_an_upload_whose_message_never_reached_the_broker(submit, bundle_archive):
    submission = submit(bundle_archive())  # on_commit never ran: as if the broker was down
    assert Submission.objects.get(pk=submission.pk).dispatched_at is None
    Submission.objects.filter(pk=submission.pk).update(created_at=timezone.now() - timedelta(seconds=30))
    assert reap_stuck_validations() == 1
    submission.refresh_from_db()
    assert submission.state == states.QUARANTINED and submission.dispatched_at is not None


def test_it_sends_again_an_upload_whose_message_was_lost(submit, bundle_archive, settings):
    submission = submit(bundle_archive())
    long_ago = timezone.now() - timedelta(seconds=settings.SUBMISSION_VALIDATING_TIMEOUT_S + 1)
    Submission.objects.filter(pk=submission.pk).update(created_at=long_ago, dispatched_at=long_ago)
    assert reap_stuck_validations() == 1
    submission.refresh_from_db()
    assert submission.state == states.QUARANTINED


def test_a_message_queued_recently_is_not_sent_twice(submit, bundle_archive):
    submission = submit(bundle_archive())
    Submission.objects.filter(pk=submission.pk).update(
        created_at=timezone.now() - timedelta(minutes=5), dispatched_at=timezone.now() - timedelta(minutes=5)
    )
    assert reap_stuck_validations() == 0  # still waiting in a long queue, not lost
