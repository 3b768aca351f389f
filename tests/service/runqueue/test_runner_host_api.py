"""The runner-host API checks every call against the run request's assigned host.

Two registered hosts: host A's token cannot claim, report on, heartbeat,
send hardware for, finish or end host B's run (403, nothing changed); a
revoked or rotated token is refused (401); a claim has one winner; the
submission is filed as the run request's submitter, whoever the worker says.
"""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from submissions.models import Submission
from submissions.runqueue import states, tokens
from submissions.runqueue.models import RunnerHost, RunRequest, RunRequestRow

pytestmark = pytest.mark.django_db

API = "/api/runner/v1/"


@pytest.fixture
def two_hosts(make_host, make_user):
    a = make_host("gpu-a")
    b = make_host("gpu-b", owner=make_user("other-owner@example.org"))
    return a, tokens.issue(a), b, tokens.issue(b)


def _post(client, token, path, body=None, **extra):
    return client.post(API + path, data=json.dumps(body or {}), content_type="application/json",
                       HTTP_AUTHORIZATION=f"Bearer {token}", **extra)


def _snapshot(request_id):
    request = RunRequest.objects.get(pk=request_id)
    return (request.state, request.attempts, request.claim_token, request.heartbeat_at, request.progress_done,
            request.log_tail, request.submission_id, request.failure_reason, request.events.count(),
            RunRequestRow.objects.filter(request_id=request_id).count())


def test_a_token_is_stored_only_as_its_hash_and_ends_when_rotated_or_revoked(client, two_hosts):
    a, token_a, _, _ = two_hosts
    a.refresh_from_db()
    assert token_a.startswith("bph_") and token_a not in (a.token_hash, a.token_prefix)
    assert a.token_hash == tokens.digest(token_a) and len(a.token_hash) == 64
    assert _post(client, token_a, "heartbeat/", {"worker": "w"}).status_code == 200
    rotated = tokens.issue(a)
    old = _post(client, token_a, "heartbeat/", {"worker": "w"})
    assert old.status_code == 401 and "invalid or revoked host token" in old.json()["error"]
    assert _post(client, rotated, "heartbeat/", {"worker": "w"}).status_code == 200
    assert tokens.revoke(a)
    assert _post(client, rotated, "heartbeat/", {"worker": "w"}).status_code == 401
    assert client.post(API + "heartbeat/", {}, content_type="application/json").status_code == 401
    # A user's API token is not a host token.
    assert _post(client, "bp_not-a-host-token", "heartbeat/", {"worker": "w"}).status_code == 401


def test_host_a_cannot_touch_host_bs_run(client, two_hosts, queue, operator):
    a, token_a, b, token_b = two_hosts
    request = queue(b)
    before = _snapshot(request.pk)
    rid = request.pk
    for path, body in (
        (f"runs/{rid}/claim/", {"worker": "ROGUE@gpu-a"}),
        (f"runs/{rid}/heartbeat/", {"claim": "6f1c8e62-0000-4000-8000-000000000001"}),
        (f"runs/{rid}/progress/", {"claim": "6f1c8e62-0000-4000-8000-000000000001", "attempt": 1, "done": 5,
                                   "total": 5, "current": "x", "log_tail": "pwned",
                                   "rows": [{"index": 0, "case": "x", "ok": True, "raw": {}}]}),
        (f"runs/{rid}/hardware/", {"claim": "6f1c8e62-0000-4000-8000-000000000001", "hardware": {"hostname": "x"}}),
        (f"runs/{rid}/end/", {"claim": "6f1c8e62-0000-4000-8000-000000000001", "state": "cancelled",
                              "reason": "rogue"}),
    ):
        answer = _post(client, token_a, path, body)
        assert answer.status_code == 403, (path, answer.content)
        assert "not assigned to runner host gpu-a" in answer.json()["error"]
    assert _snapshot(rid) == before

    # B claims it; A still cannot report on, finish or end it, even knowing B's claim token.
    claimed = _post(client, token_b, f"runs/{rid}/claim/", {"worker": "gpu-b@box"}).json()
    assert claimed["claimed"] is True and claimed["spec"]["host"] == "gpu-b"
    claim = claimed["claim"]
    before = _snapshot(rid)
    for path, body in ((f"runs/{rid}/heartbeat/", {"claim": claim}),
                       (f"runs/{rid}/progress/", {"claim": claim, "attempt": 1, "done": 1, "total": 1, "current": "",
                                                  "log_tail": "", "rows": []}),
                       (f"runs/{rid}/end/", {"claim": claim, "state": "failed", "reason": "rogue"})):
        assert _post(client, token_a, path, body).status_code == 403, path
    finish = client.post(API + f"runs/{rid}/finish/", {"claim": claim, "bundle": SimpleUploadedFile("x.tar.gz", b"x")},
                         HTTP_AUTHORIZATION=f"Bearer {token_a}")
    assert finish.status_code == 403
    assert _snapshot(rid) == before and Submission.objects.count() == 0

    # Heartbeat "as" host B is impossible: the host is the token's, whatever the body says.
    _post(client, token_a, "heartbeat/", {"worker": "ROGUE --hostname=gpu-b"})
    b.refresh_from_db(), a.refresh_from_db()
    assert b.heartbeat_at is None and a.heartbeat_at is not None and a.worker_name == "ROGUE --hostname=gpu-b"


def test_a_claim_has_one_winner_and_a_stale_claim_token_is_refused(client, two_hosts, queue):
    _, _, b, token_b = two_hosts
    request = queue(b)
    first = _post(client, token_b, f"runs/{request.pk}/claim/", {"worker": "one"}).json()
    second = _post(client, token_b, f"runs/{request.pk}/claim/", {"worker": "two"}).json()
    assert first["claimed"] is True and second["claimed"] is False
    assert "already running on one" in second["reason"]
    stale = _post(client, token_b, f"runs/{request.pk}/progress/", {
        "claim": "6f1c8e62-0000-4000-8000-000000000001", "attempt": 1, "done": 1, "total": 1, "current": "",
        "log_tail": "", "rows": []})
    assert stale.status_code == 409
    assert _post(client, token_b, f"runs/{request.pk}/heartbeat/",
                 {"claim": "6f1c8e62-0000-4000-8000-000000000001"}).json()["stop"] == "lost"
    assert RunRequest.objects.get(pk=request.pk).claimed_by == "one"


def test_the_submission_is_filed_as_the_requests_submitter(client, two_hosts, queue, operator, bundle_archive):
    _, _, b, token_b = two_hosts
    request = queue(b, user=operator)
    claim = _post(client, token_b, f"runs/{request.pk}/claim/", {"worker": "w"}).json()["claim"]
    archive = bundle_archive()
    answer = client.post(API + f"runs/{request.pk}/finish/", {
        "claim": claim, "bundle": SimpleUploadedFile(archive.name, archive.read_bytes()), "rows": "3",
        "timings": json.dumps({"run_s": 1.0}), "submitter": "someone-else@example.org"},
        HTTP_AUTHORIZATION=f"Bearer {token_b}")
    assert answer.status_code == 200, answer.content
    submission = Submission.objects.get(pk=answer.json()["submission"])
    assert submission.submitter == operator
    request.refresh_from_db()
    assert request.state == states.FINISHED and request.submission == submission


def test_bad_bodies_are_one_clear_400(client, two_hosts, queue):
    _, _, b, token_b = two_hosts
    request = queue(b)
    claim = _post(client, token_b, f"runs/{request.pk}/claim/", {"worker": "w"}).json()["claim"]
    bad = _post(client, token_b, f"runs/{request.pk}/progress/", {"claim": claim, "attempt": "one"})
    assert bad.status_code == 400 and bad.json()["error"] == "attempt: A valid integer is required."
    bad = _post(client, token_b, f"runs/{request.pk}/end/", {"claim": claim, "state": "finished", "reason": "x"})
    assert bad.status_code == 400 and bad.json()["error"] == "state: \"finished\" is not a valid choice."
    assert _post(client, token_b, "runs/not-a-uuid/claim/", {}).status_code == 404


def test_a_disabled_host_is_refused(client, two_hosts):
    a, token_a, _, _ = two_hosts
    RunnerHost.objects.filter(pk=a.pk).update(enabled=False)
    assert _post(client, token_a, "heartbeat/", {"worker": "w"}).status_code == 401
