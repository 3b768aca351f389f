"""GET /api/v1/run-requests/<id>/ and POST …/cancel/: progress, rows, log tail, events; visibility."""

from __future__ import annotations

import pytest

from submissions.runqueue import states
from submissions.runqueue.models import RunRequest, RunRequestRow


@pytest.fixture
def api(client, operator):
    client.force_login(operator)
    return client


def test_it_shows_progress_rows_and_log_tail(api, host, queue):
    request = queue(host, pack="runtime-sweep")
    RunRequest.objects.filter(pk=request.pk).update(state=states.RUNNING, attempts=1, progress_done=2,
                                                    progress_total=12, current="short rep 1/3", log_tail="line")
    RunRequestRow.objects.create(request=request, attempt=1, index=0, case="short", repetition=1, ok=False,
                                 raw={"ok": False, "error": "cannot connect", "timing": {"wall_s": 0.01}})
    body = api.get(f"/api/v1/run-requests/{request.pk}/").json()
    assert body["progress"] == {"done": 2, "total": 12, "current": "short rep 1/3"}
    assert body["rows"] == [{"attempt": 1, "case": "short", "repetition": 1, "ok": False, "wall_s": 0.01,
                             "ttft_s": None, "decode_rate": None, "decode_tps": None,
                             "error": "cannot connect"}]
    assert body["log_tail"] == "line" and body["submission"] is None
    assert body["events"][0]["to_state"] == "queued"


def test_it_hides_requests_from_strangers(client, host, queue, submitter):
    request = queue(host)
    client.force_login(submitter)
    assert client.get(f"/api/v1/run-requests/{request.pk}/").status_code == 404
    assert client.post(f"/api/v1/run-requests/{request.pk}/cancel/").status_code == 404


def test_cancel_answers_what_happened(api, host, queue):
    request = queue(host)
    first = api.post(f"/api/v1/run-requests/{request.pk}/cancel/")
    assert first.status_code == 200 and first.json()["cancel"] == "cancelled"
    assert first.json()["run_request"]["state"] == "cancelled"
    again = api.post(f"/api/v1/run-requests/{request.pk}/cancel/")
    assert again.status_code == 409 and again.json()["cancel"] == "final"


def test_cancelling_a_running_request_asks_the_worker(api, host, queue):
    request = queue(host)
    RunRequest.objects.filter(pk=request.pk).update(state=states.RUNNING)
    body = api.post(f"/api/v1/run-requests/{request.pk}/cancel/").json()
    assert body["cancel"] == "requested" and body["run_request"]["state"] == "running"
    assert "cancel requested by ops@example.org" in body["run_request"]["events"][-1]["reason"]
