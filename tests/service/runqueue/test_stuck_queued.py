"""No run request stays `queued` unseen: each runs, is sent again, or ends with a reason, within a stated bound.

- left queued by a busy host ("the reaper re-sends it"): re-sent once the host is idle;
- its message lost (a purged queue): re-sent while the host is online and idle;
- its host offline for longer than RUN_REQUEST_MAX_QUEUED_S: ends failed, saying so;
- its host revoked or disabled: ends failed at once (revoke) or at the next reaper pass;
- a worker killed mid-run: recovered within RUN_HEARTBEAT_TIMEOUT_S + RUN_REAPER_INTERVAL_S,
  the bound docs/runner-hosts.md states (a real SIGKILLed worker: test_e2e_workers.py).
"""

from __future__ import annotations

import json
import re
from datetime import timedelta
from io import StringIO
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command
from django.utils import timezone

from submissions.runqueue import states, tokens
from submissions.runqueue.models import RunnerHost, RunRequest
from submissions.runqueue.recovery import recover_lost_runs

pytestmark = pytest.mark.django_db

API = "/api/runner/v1/"
DOCS = Path(__file__).resolve().parents[3] / "docs" / "runner-hosts.md"


def _post(client, token, path, body):
    return client.post(API + path, data=json.dumps(body), content_type="application/json",
                       HTTP_AUTHORIZATION=f"Bearer {token}")


def _ago(request, **fields):
    now = timezone.now()
    RunRequest.objects.filter(pk=request.pk).update(**{k: now - timedelta(seconds=v) for k, v in fields.items()})


def _sent_at(request):
    return RunRequest.objects.get(pk=request.pk).sent_at


def test_a_request_left_queued_by_a_busy_host_is_re_sent_when_it_is_idle(client, host, queue):
    token = tokens.issue(host)
    first, second = queue(host), queue(host)
    claim = _post(client, token, f"runs/{first.pk}/claim/", {"worker": "w"}).json()["claim"]
    busy = _post(client, token, f"runs/{second.pk}/claim/", {"worker": "w"}).json()
    assert busy["claimed"] is False and "busy with another run; left queued (the reaper re-sends it)" in busy["reason"]
    _ago(second, sent_at=settings.RUN_RESEND_AFTER_S + 1)
    assert _post(client, token, "heartbeat/", {"worker": "w"}).status_code == 200  # online, but busy
    assert recover_lost_runs() == []
    _post(client, token, f"runs/{first.pk}/end/", {"claim": claim, "state": "failed", "reason": "done"})
    before = _sent_at(second)
    assert recover_lost_runs() == [(str(second.pk), "re-sent")]
    assert _sent_at(second) > before
    assert "sent again" in second.events.last().reason
    assert recover_lost_runs() == []  # not again until RUN_RESEND_AFTER_S has passed once more
    assert _post(client, token, f"runs/{second.pk}/claim/", {"worker": "w"}).json()["claimed"] is True


def test_a_request_whose_message_was_purged_is_re_sent_while_its_host_is_online(client, host, queue):
    token = tokens.issue(host)
    request = queue(host)
    _ago(request, sent_at=settings.RUN_RESEND_AFTER_S + 5)  # the queue was purged: nobody will deliver it
    assert recover_lost_runs() == []  # the host is offline: nothing would take it now
    before = _sent_at(request)
    # The host's own heartbeat recovers its requests (as the reaper would, every RUN_REAPER_INTERVAL_S).
    beat = _post(client, token, "heartbeat/", {"worker": "w"}).json()
    assert beat["recovered"] == [[str(request.pk), "re-sent"]]
    assert _sent_at(request) > before
    assert RunRequest.objects.get(pk=request.pk).state == states.QUEUED


def test_a_request_whose_host_stays_offline_ends_with_a_reason(host, queue):
    tokens.issue(host)
    request = queue(host)
    _ago(request, created_at=settings.RUN_REQUEST_MAX_QUEUED_S + 1, sent_at=settings.RUN_REQUEST_MAX_QUEUED_S)
    assert recover_lost_runs() == [(str(request.pk), states.FAILED)]
    request.refresh_from_db()
    assert request.state == states.FAILED and "not started within RUN_REQUEST_MAX_QUEUED_S" in request.failure_reason


def test_requests_for_a_revoked_host_end_with_a_reason_at_once(host, queue):
    tokens.issue(host)
    request = queue(host)
    out = StringIO()
    call_command("runner_host", "revoke", host.name, stdout=out)
    assert "1 queued request(s) ended" in out.getvalue()
    request.refresh_from_db()
    assert request.state == states.FAILED
    assert request.failure_reason == f"runner host {host.name} has no host token (revoked); no worker can take this request"


def test_requests_for_a_disabled_host_end_at_the_next_reaper_pass(host, queue):
    tokens.issue(host)
    request = queue(host)
    RunnerHost.objects.filter(pk=host.pk).update(enabled=False)
    assert recover_lost_runs() == [(str(request.pk), states.FAILED)]
    assert "is disabled" in RunRequest.objects.get(pk=request.pk).failure_reason


def test_a_killed_worker_is_recovered_within_the_bound_the_docs_state(host, queue):
    bound = settings.RUN_HEARTBEAT_TIMEOUT_S + settings.RUN_REAPER_INTERVAL_S
    assert bound <= 40  # seconds, not the former 120 s heartbeat timeout alone
    assert settings.CELERY_BEAT_SCHEDULE["reap-lost-runs"]["schedule"] == settings.RUN_REAPER_INTERVAL_S
    stated = re.search(r"recovered within \*\*(\d+) s\*\*", DOCS.read_text())
    assert stated and int(stated.group(1)) == bound, "docs/runner-hosts.md states the bound"
    assert settings.RUN_HEARTBEAT_INTERVAL_S * 6 <= settings.RUN_HEARTBEAT_TIMEOUT_S  # six missed beats first

    request = queue(host)
    now = timezone.now()
    RunRequest.objects.filter(pk=request.pk).update(
        state=states.RUNNING, attempts=1, claim_token="6f1c8e62-0000-4000-8000-000000000001", claimed_by="w",
        started_at=now - timedelta(seconds=60), heartbeat_at=now - timedelta(seconds=settings.RUN_HEARTBEAT_TIMEOUT_S - 2))
    assert recover_lost_runs() == []  # still within the timeout: a slow beat is not a lost worker
    _ago(request, heartbeat_at=settings.RUN_HEARTBEAT_TIMEOUT_S + 1)
    assert recover_lost_runs() == [(str(request.pk), "retried")]
