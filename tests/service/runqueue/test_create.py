"""Creating run requests: who may, and every choice checked against the host's allowlists."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from submissions.runqueue import states
from submissions.runqueue.models import RunRequest
from submissions.runqueue.services import RequestRefused, create_run_request
from tests.service.runqueue.conftest import MODEL


def _create(user, runner, **overrides):
    fields = dict(host=runner.name, endpoint="ref", model=MODEL, pack="smoke-chat")
    fields.update(overrides)
    return create_run_request(user, **fields)


def test_an_operator_queues_a_request_on_any_host(host, operator):
    request = _create(operator, host, repetitions=3, openai_stream_usage="omit", time_limit_s=600)
    assert (request.state, request.requested_by, request.pack.pack_id) == (states.QUEUED, operator, "smoke-chat")
    assert (request.repetitions, request.openai_stream_usage, request.time_limit_s) == (3, "omit", 600)
    assert request.max_attempts == 2
    assert request.events.first().reason == "queued for runs.gpu-a"


def test_the_owner_queues_on_their_own_host_only(make_host, host, host_owner, make_user):
    other = make_host("gpu-b", owner=make_user("someone@example.org"))
    assert _create(host_owner, host).host == host
    with pytest.raises(RequestRefused, match="only operators and the owner of gpu-b") as refused:
        _create(host_owner, other)
    assert refused.value.status == 403


def test_a_stranger_cannot_queue_anything(host, submitter):
    with pytest.raises(RequestRefused) as refused:
        _create(submitter, host)
    assert refused.value.status == 403
    assert not RunRequest.objects.exists()


@pytest.mark.parametrize("overrides, message", [
    ({"host": "nope"}, "no enabled runner host named 'nope'"),
    ({"endpoint": "http://169.254.169.254/latest"}, "is not on the endpoint allowlist of gpu-a (allowlisted: ref); endpoints are chosen by name, never by URL"),
    ({"endpoint": "other"}, "'other' is not on the endpoint allowlist"),
    ({"model": "gpt-4"}, "model 'gpt-4' is not served by gpu-a/ref (allowlisted: scripted-demo)"),
    ({"pack": "tool-json"}, "pack 'tool-json' is not on the pack allowlist of gpu-a (allowlisted: runtime-sweep 1.1.0, smoke-chat 0.1.0)"),
    ({"pack_version": "9.9.9"}, "pack 'smoke-chat 9.9.9' is not on the pack allowlist"),
    ({"repetitions": 0}, "repetitions must be an integer from 1 to 100"),
    ({"repetitions": True}, "repetitions must be an integer from 1 to 100"),
    ({"time_limit_s": 10 ** 9}, "time_limit_s must be an integer from 1 to 21600"),
    ({"openai_stream_usage": "sometimes"}, "openai_stream_usage must be include or omit"),
])
def test_it_refuses_any_choice_off_the_allowlists_with_one_clear_message(host, operator, overrides, message):
    with pytest.raises(RequestRefused) as refused:
        _create(operator, host, **overrides)
    assert message in refused.value.message and refused.value.status == 400
    assert not RunRequest.objects.exists()


def test_a_disabled_host_takes_no_new_requests(host, operator):
    host.enabled = False
    host.save()
    with pytest.raises(RequestRefused, match="no enabled runner host named 'gpu-a'"):
        _create(operator, host)


def test_a_broker_outage_keeps_the_request_queued_for_the_reaper_to_send(host, operator, monkeypatch):
    """The row is its own outbox, as an upload's is: created (201), unsent, and sent by the reaper later."""
    from kombu.exceptions import OperationalError

    from submissions.runqueue import broker
    from submissions.runqueue.tasks import reap_lost_runs

    sent = []

    def broker_down(*args, **kwargs):
        raise OperationalError("Error 111 connecting to 127.0.0.1:6399. Connection refused.")

    monkeypatch.setattr(broker.runner_app(), "send_task", broker_down)
    request = _create(operator, host)
    stored = RunRequest.objects.get(pk=request.pk)
    assert stored.state == "queued" and stored.sent_at is None
    monkeypatch.setattr(broker.runner_app(), "send_task", lambda *a, **k: sent.append(k["args"]))
    RunRequest.objects.filter(pk=request.pk).update(created_at=timezone.now() - timedelta(minutes=2))
    reap_lost_runs()
    assert sent == [[str(request.pk)]]
    assert RunRequest.objects.get(pk=request.pk).sent_at is not None
