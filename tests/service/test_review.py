import threading

import pytest
from django.core import mail
from django.db import connection

from registry_site.models import PublishedRow, PublishedRun
from submissions import states
from submissions.review import DecisionError, approve, reject


@pytest.fixture
def quarantined(submit, bundle_archive, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        submission = submit(bundle_archive("2026-04-29-llama-server-runtime"))
    submission.refresh_from_db()
    assert submission.state == states.QUARANTINED
    mail.outbox.clear()
    return submission


def test_it_publishes_on_approval_exactly_once(quarantined, operator):
    assert approve(quarantined.pk, operator) is True
    assert approve(quarantined.pk, operator) is False
    runs = PublishedRun.objects.filter(submission=quarantined)
    assert runs.count() == 1
    run = runs.get()
    assert (run.pack_id, run.row_count, run.ok_count) == ("runtime-sweep", 9, 9)
    assert PublishedRow.objects.filter(run=run).count() == 9
    short = run.cases.get(case="short")
    assert short.decode_tps == pytest.approx(411.8203)  # median of the three real rows
    assert len(short.fingerprint) == 64
    assert [m.subject for m in mail.outbox] == [f"[Benchpack] Submission approved: {quarantined.archive_name}"]


def test_it_requires_a_reason_to_reject(quarantined, operator):
    with pytest.raises(DecisionError):
        reject(quarantined.pk, operator, "   ")
    quarantined.refresh_from_db()
    assert quarantined.state == states.QUARANTINED


def test_it_rejects_with_the_reason_in_the_email(quarantined, operator):
    assert reject(quarantined.pk, operator, "model file checksum missing") is True
    quarantined.refresh_from_db()
    assert quarantined.state == states.REJECTED
    assert not PublishedRun.objects.exists()
    assert "model file checksum missing" in mail.outbox[0].body
    assert approve(quarantined.pk, operator) is False  # a decided submission stays decided


@pytest.mark.django_db(transaction=True)
def test_it_publishes_once_when_two_operators_approve_at_once(submit, bundle_archive, operator, make_user):
    if connection.vendor == "sqlite":
        pytest.skip("needs concurrent writers; runs on PostgreSQL in CI")
    submission = submit(bundle_archive())
    from submissions.tasks import validate_submission

    validate_submission(str(submission.pk))
    second = make_user("ops2@example.org")
    from accounts.operators import make_operator

    make_operator(second)
    results = []
    barrier = threading.Barrier(2)

    def decide(user):
        barrier.wait()
        results.append(approve(submission.pk, user))
        connection.close()

    threads = [threading.Thread(target=decide, args=(u,)) for u in (operator, second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == [False, True]
    assert PublishedRun.objects.filter(submission=submission).count() == 1
