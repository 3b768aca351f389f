"""Quarantined or rejected data is never reachable anonymously: not by list, URL or API."""

import pytest

from submissions import states
from submissions.review import reject
from tests.service.vouch import approve
from submissions.tasks import validate_submission


@pytest.fixture
def decided(submit, bundle_archive, operator):
    quarantined = submit(bundle_archive("2026-04-29-llama-server-smoke"))
    rejected = submit(bundle_archive("2026-04-28-mlx-lm-smoke"))
    approved = submit(bundle_archive("2026-04-29-llama-server-runtime"))
    for s in (quarantined, rejected, approved):
        assert validate_submission(str(s.pk)) == states.QUARANTINED
    reject(rejected.pk, operator, "duplicate of an earlier run")
    approve(approved.pk, operator)
    return {"quarantined": quarantined, "rejected": rejected, "approved": approved}


def test_it_lists_only_approved_runs_publicly(client, decided):
    page = client.get("/").content.decode()
    assert "runtime-sweep" in page
    assert "smoke-chat" not in page
    api = client.get("/api/v1/runs/").json()["results"]
    assert [r["pack_id"] for r in api] == ["runtime-sweep"]


def test_it_answers_404_for_guessed_submission_urls(client, decided):
    for submission in decided.values():
        assert client.get(f"/submissions/{submission.pk}/").status_code in (302, 404)  # login first
        assert client.get(f"/api/v1/submissions/{submission.pk}/").status_code in (401, 403, 404)
        assert client.get(f"/review/{submission.pk}/").status_code in (302, 403)


def test_it_hides_other_peoples_submissions_from_a_logged_in_user(client, decided, make_user):
    client.force_login(make_user("mallory@example.org"))
    for submission in decided.values():
        assert client.get(f"/submissions/{submission.pk}/").status_code == 404
        assert client.get(f"/api/v1/submissions/{submission.pk}/").status_code == 404
    assert client.get("/review/").status_code == 403


def test_it_shows_a_submitter_their_own_in_every_state(client, decided, submitter):
    client.force_login(submitter)
    page = client.get("/submissions/").content.decode()
    for state in ("Quarantined", "Rejected", "Approved"):
        assert state in page
    assert client.get(f"/submissions/{decided['rejected'].pk}/").status_code == 200


def test_it_has_no_public_page_for_unapproved_runs(client, decided):
    from registry_site.catalogue.models import PublishedRun

    assert PublishedRun.objects.count() == 1
    missing = PublishedRun.objects.get().pk + 1
    assert client.get(f"/runs/{missing}/").status_code == 404
    assert client.get(f"/api/v1/runs/{missing}/").status_code == 404
