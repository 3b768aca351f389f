"""Withdraw (submitter) and unpublish / flag / republish / unflag (operator) from the pages."""

import pytest

from registry_site.catalogue.models import PublishedRun
from submissions.models import SubmissionEvent

pytestmark = pytest.mark.django_db


def test_the_submitter_withdraws_with_a_reason_and_the_run_leaves_every_public_page(client, publish, submitter):
    run = publish("2026-04-29-llama-server-runtime")
    client.force_login(submitter)
    response = client.post(f"/runs/{run.pk}/withdraw/", {"reason": "wrong quantization recorded"})
    assert response.status_code == 302 and response["Location"] == f"/submissions/{run.submission_id}/"
    assert PublishedRun.objects.get(pk=run.pk).status == "withdrawn"
    assert SubmissionEvent.objects.filter(submission=run.submission, to_state="withdrawn",
                                          reason__contains="wrong quantization").exists()
    client.logout()
    assert client.get(f"/runs/{run.pk}/").status_code == 404
    assert client.get("/leaderboards/runtime-sweep/").status_code == 404  # nothing public left on that board


def test_a_withdrawal_needs_a_reason_and_only_the_submitter_may(client, publish, submitter, make_user):
    run = publish("2026-04-29-llama-server-runtime")
    client.force_login(submitter)
    page = client.post(f"/runs/{run.pk}/withdraw/", {"reason": "  "}, follow=True).content.decode()
    assert "reason for the withdrawal is required" in page and PublishedRun.objects.get(pk=run.pk).status == "published"
    client.force_login(make_user("mallory@example.org"))
    assert client.post(f"/runs/{run.pk}/withdraw/", {"reason": "x"}).status_code == 404
    client.logout()
    assert client.post(f"/runs/{run.pk}/withdraw/", {"reason": "x"}).status_code == 302  # to the login page
    assert PublishedRun.objects.get(pk=run.pk).status == "published"
    assert client.get(f"/runs/{run.pk}/withdraw/").status_code in (302, 405)


def test_an_operator_flags_with_a_public_note_then_unpublishes_and_republishes(client, publish, operator, submitter):
    run = publish("2026-04-29-llama-server-runtime")
    client.force_login(operator)
    client.post(f"/runs/{run.pk}/flag/", {"reason": "TTFT below the network round trip"})
    client.logout()
    for url in (f"/runs/{run.pk}/", "/leaderboards/runtime-sweep/short/", "/"):
        assert "TTFT below the network round trip" in client.get(url).content.decode(), url
    client.force_login(operator)
    client.post(f"/runs/{run.pk}/unpublish/", {"reason": "submitter asked by mail"})
    assert PublishedRun.objects.get(pk=run.pk).status == "unpublished"
    page = client.get(f"/submissions/{run.submission_id}/").content.decode()
    assert "Publish again" in page
    client.post(f"/runs/{run.pk}/republish/", {})
    client.post(f"/runs/{run.pk}/unflag/", {})
    fresh = PublishedRun.objects.get(pk=run.pk)
    assert fresh.status == "published" and fresh.flag_note == ""


def test_people_who_are_not_operators_cannot_moderate(client, publish, submitter):
    run = publish("2026-04-29-llama-server-runtime")
    client.force_login(submitter)
    for action in ("unpublish", "flag", "republish", "unflag"):
        assert client.post(f"/runs/{run.pk}/{action}/", {"reason": "x"}).status_code == 403
    assert PublishedRun.objects.get(pk=run.pk).status == "published"
