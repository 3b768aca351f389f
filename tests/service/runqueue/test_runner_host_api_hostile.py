"""Hostile bodies on the runner-host API: each answers 4xx with nothing stored, never a 500.

A replayed finish, a finish of a run never claimed (refused before anything
is inserted, with the same answer whether or not the archive's bytes were
submitted before), JSON nested 3,000 deep, 2^40 and 2^63 where counts are
expected, lone surrogates, NUL characters (PostgreSQL refuses them: run this
file with DATABASE_URL=postgres://… as well), negative row indexes, rows
filed under an attempt that is not the claimed one.
"""

from __future__ import annotations

import json
import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from submissions.models import Submission
from submissions.runqueue import tokens
from submissions.runqueue.models import RunRequest, RunRequestRow

pytestmark = pytest.mark.django_db

API = "/api/runner/v1/"
OTHER_CLAIM = "6f1c8e62-0000-4000-8000-000000000001"


def _post_text(client, token, path, text):
    return client.post(API + path, data=text, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}")


def _post(client, token, path, body):
    return _post_text(client, token, path, json.dumps(body))


def _finish(client, token, request_id, claim, data: bytes, **fields):
    return client.post(API + f"runs/{request_id}/finish/",
                       {"claim": claim, "bundle": SimpleUploadedFile("bundle.tar.gz", data), **fields},
                       HTTP_AUTHORIZATION=f"Bearer {token}")


def _stored():
    return (Submission.objects.count(), RunRequestRow.objects.count(),
            list(RunRequest.objects.values_list("state", "attempts", "progress_done", "current", "log_tail",
                                                "submission_id")))


@pytest.fixture
def claimed(client, host, queue):
    token = tokens.issue(host)
    request = queue(host)
    claim = _post(client, token, f"runs/{request.pk}/claim/", {"worker": "w"}).json()["claim"]
    return token, request, claim


def _progress(claim, **changes):
    body = {"claim": claim, "attempt": 1, "done": 1, "total": 2, "current": "short", "log_tail": "",
            "rows": [{"index": 0, "case": "short", "repetition": 1, "ok": True, "raw": {"case": "short"}}]}
    body.update(changes)
    return body


def test_a_replayed_finish_is_409_and_stores_nothing(client, claimed, bundle_archive):
    token, request, claim = claimed
    data = bundle_archive().read_bytes()
    assert _finish(client, token, request.pk, claim, data).status_code == 200
    before = _stored()
    again = _finish(client, token, request.pk, claim, data)
    assert again.status_code == 409, again.content
    assert _stored() == before


def test_a_finish_of_a_run_never_claimed_is_refused_before_anything_is_inserted(client, host, queue, submit,
                                                                               bundle_archive):
    token = tokens.issue(host)
    known = bundle_archive()
    submit(known)  # these bytes exist in the registry already
    request = queue(host)
    before = _stored()
    with_known = _finish(client, token, request.pk, OTHER_CLAIM, known.read_bytes())
    with_new = _finish(client, token, request.pk, OTHER_CLAIM, b"never seen bytes")
    assert with_known.status_code == with_new.status_code == 409
    assert with_known.json() == with_new.json()  # nothing tells the host whether the bytes were known
    assert _stored() == before


@pytest.mark.parametrize("path", ["heartbeat/", "runs/{rid}/progress/", "runs/{rid}/claim/", "runs/{rid}/end/"])
def test_json_nested_3000_deep_is_400(client, claimed, path):
    token, request, _ = claimed
    before = _stored()
    answer = _post_text(client, token, path.format(rid=request.pk), '{"worker": ' + "[" * 3000 + "]" * 3000 + "}")
    assert answer.status_code == 400 and "nested" in answer.json()["error"]
    assert _stored() == before


def test_timings_nested_3000_deep_in_a_finish_is_400(client, claimed):
    token, request, claim = claimed
    before = _stored()
    answer = _finish(client, token, request.pk, claim, b"x", timings="[" * 3000 + "]" * 3000)
    assert answer.status_code == 400 and "nested" in answer.json()["error"]
    assert _stored() == before


@pytest.mark.parametrize("value", [2 ** 40, 2 ** 63, -1])
@pytest.mark.parametrize("where", ["attempt", "done", "total", "index", "repetition"])
def test_counts_out_of_range_are_400(client, claimed, where, value):
    token, request, claim = claimed
    body = _progress(claim)
    if where in ("index", "repetition"):
        body["rows"][0][where] = value
    else:
        body[where] = value
    before = _stored()
    answer = _post(client, token, f"runs/{request.pk}/progress/", body)
    assert answer.status_code == 400, answer.content
    assert re.search(r"(less|greater) than or equal to (10000000|0)", answer.json()["error"]), answer.json()
    assert _stored() == before


@pytest.mark.parametrize("bad", ["\ud800", "a\x00b"], ids=["lone-surrogate", "nul"])
@pytest.mark.parametrize("where", ["current", "log_tail", "raw-value", "raw-key", "case"])
def test_texts_that_cannot_be_stored_are_400(client, claimed, where, bad):
    token, request, claim = claimed
    body = _progress(claim)
    if where == "raw-value":
        body["rows"][0]["raw"]["error"] = bad
    elif where == "raw-key":
        body["rows"][0]["raw"][bad] = 1
    elif where == "case":
        body["rows"][0]["case"] = bad
    else:
        body[where] = bad
    before = _stored()
    answer = _post(client, token, f"runs/{request.pk}/progress/", body)
    assert answer.status_code == 400, answer.content
    assert "NUL" in answer.json()["error"] or "surrogate" in answer.json()["error"]
    assert _stored() == before


@pytest.mark.parametrize("bad", ["\ud800", "a\x00b"], ids=["lone-surrogate", "nul"])
def test_texts_that_cannot_be_stored_are_400_on_every_call(client, claimed, bad):
    token, request, claim = claimed
    before = _stored()
    for path, body in (("heartbeat/", {"worker": bad}), ("heartbeat/", {"worker": "w", "hardware": {"cpu": bad}}),
                       ("stopping/", {"worker": bad}), (f"runs/{request.pk}/hardware/",
                                                        {"claim": claim, "hardware": {bad: 1}}),
                       (f"runs/{request.pk}/end/", {"claim": claim, "state": "failed", "reason": bad})):
        answer = _post(client, token, path, body)
        assert answer.status_code == 400, (path, answer.content)
    # A multipart text field carries bytes (a lone surrogate cannot be UTF-8 encoded there); the JSON
    # in `timings` carries either as an escape.
    for fields in ([{"log_tail": bad}] if "\x00" in bad else []) + [{"timings": json.dumps({"run_s": bad})}]:
        answer = _finish(client, token, request.pk, claim, b"x", **fields)
        assert answer.status_code == 400, (fields, answer.content)
    assert _stored() == before


def test_rows_under_another_attempt_or_a_malformed_claim_store_nothing(client, claimed):
    token, request, claim = claimed
    before = _stored()
    ahead = _post(client, token, f"runs/{request.pk}/progress/", _progress(claim, attempt=2))
    assert ahead.status_code == 409 and "not the claimed attempt" in ahead.json()["error"]
    malformed = _post(client, token, f"runs/{request.pk}/progress/", _progress("not-a-uuid"))
    assert malformed.status_code == 400 and malformed.json()["error"].startswith("claim:")
    assert _stored() == before
    assert _post(client, token, f"runs/{request.pk}/progress/", _progress(claim)).status_code == 200
    assert RunRequestRow.objects.filter(request=request, attempt=1, index=0).exists()
