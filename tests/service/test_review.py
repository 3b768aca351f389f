import threading

import pytest
from django.core import mail
from django.db import connection

from registry_site.catalogue.models import PublishedRow, PublishedRun
from submissions import states
from submissions.review import DecisionError, reject
from tests.service.vouch import approve


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
def test_eight_operators_approving_at_once_publish_once_and_never_fail(submit, bundle_archive, make_user):
    """Runs on the default SQLite too (a file test database, IMMEDIATE transactions):
    before, a deferred transaction that read then wrote failed at once with
    "database is locked" and the click answered 500."""
    from django.test import Client

    from accounts.operators import make_operator
    from submissions.tasks import validate_submission

    submission = submit(bundle_archive())
    validate_submission(str(submission.pk))
    operators = []
    for number in range(8):
        user = make_user(f"ops{number}@example.org")
        make_operator(user)
        operators.append(user)
    statuses, moved = [], []
    barrier = threading.Barrier(len(operators))

    def click(user):
        client = Client()
        client.force_login(user)
        barrier.wait()
        response = client.post(f"/review/{submission.pk}/approve/")
        statuses.append(response.status_code)
        moved.append(response.wsgi_request._messages._queued_messages[0].message if response.status_code == 302 else None)
        connection.close()

    threads = [threading.Thread(target=click, args=(u,)) for u in operators]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert statuses == [302] * 8
    assert sorted(m.startswith("Approved") for m in moved) == [False] * 7 + [True]
    assert PublishedRun.objects.filter(submission=submission).count() == 1
    assert submission.events.filter(to_state=states.APPROVED).count() == 1


def test_an_operator_cannot_approve_their_own_submission(submit, bundle_archive, operator, make_user, client):
    from accounts.operators import make_operator

    make_operator(make_user("second-operator@example.org"))
    own = submit(bundle_archive(), user=operator)
    from submissions.tasks import validate_submission

    validate_submission(str(own.pk))
    client.force_login(operator)
    page = client.get(f"/review/{own.pk}/")
    assert b"another operator must approve it" in page.content
    assert b'id="approve"' not in page.content
    client.post(f"/review/{own.pk}/approve/")
    own.refresh_from_db()
    assert own.state == states.QUARANTINED
    with pytest.raises(DecisionError, match="another operator"):
        approve(own.pk, operator)


def test_a_single_operator_may_approve_their_own_and_the_page_says_so(submit, bundle_archive, operator, client):
    own = submit(bundle_archive(), user=operator)
    from submissions.tasks import validate_submission

    validate_submission(str(own.pk))
    client.force_login(operator)
    page = client.get(f"/review/{own.pk}/")
    assert b"only one operator" in page.content and b'id="approve"' in page.content
    client.post(f"/review/{own.pk}/approve/")
    own.refresh_from_db()
    assert own.state == states.APPROVED
