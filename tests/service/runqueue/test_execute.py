"""Executing a run request in-process as its host's worker would, against the
scripted endpoint: the claim, progress, the submission it files, and every
way a run ends without one. Real Celery workers: test_e2e_workers.py."""

from __future__ import annotations

import threading
import time

import pytest
from django.core import mail

from submissions import states as submission_states
from submissions.models import Submission
from submissions.runqueue import states
from submissions.runqueue.models import RunRequest
from submissions.runqueue.services import cancel_run_request

pytestmark = pytest.mark.django_db(transaction=True)  # the watcher thread reads what the task commits


def _run(run_as, host, request):
    outcome = run_as(host, request.pk)
    request.refresh_from_db()
    return outcome


def test_it_runs_the_pack_and_files_a_submission_that_waits_for_review(host, queue, run_as, ref, operator):
    request = queue(host, pack="runtime-sweep")
    assert request.state == states.QUEUED and request.sent_at is not None

    assert _run(run_as, host, request) == states.FINISHED
    assert request.attempts == 1 and request.progress_done == request.progress_total == 12
    assert request.rows.count() == 9 and all(row.ok for row in request.rows.all())
    assert [e.to_state for e in request.events.exclude(from_state=states.QUEUED, to_state=states.QUEUED)] == [
        states.QUEUED, states.RUNNING, states.FINISHED]
    assert len(ref.log()) == 12  # 3 cases x (1 warmup + 3 repetitions), each sent once
    assert "[12/12] long rep 3/3 ok" in request.log_tail
    assert set(request.timings) == {"queue_wait_s", "run_s", "bundle_s"}

    submission = request.submission
    assert submission.submitter == operator  # the request's submitter, filed by the server
    assert submission.state == submission_states.QUARANTINED  # validated by the same task as uploads
    assert submission.provenance == "self-reported"  # the host's claim; the registry earns the published value
    assert submission.files.filter(path__endswith="hardware.json").exists()
    host.refresh_from_db()
    assert host.hardware_class  # from the first hardware.json it reported
    assert any("Submission received" in m.subject for m in mail.outbox)


def test_a_second_delivery_of_the_same_message_changes_nothing(host, queue, run_as, ref):
    request = queue(host)
    assert _run(run_as, host, request) == states.FINISHED
    assert _run(run_as, host, request) == states.FINISHED
    assert Submission.objects.count() == 1
    assert request.attempts == 1 and len(ref.log()) == 1


def test_a_worker_for_another_host_refuses_the_request(make_host, host, queue, run_as, ref):
    other = make_host("gpu-b")
    request = queue(host)
    # Even if the message lands on its queue, gpu-b's token cannot claim gpu-a's request (403).
    assert _run(run_as, other, request) == "not-this-host"
    assert request.state == states.QUEUED and request.attempts == 0
    assert [e.to_state for e in request.events.all()] == [states.QUEUED]
    assert ref.log() == []


def test_an_endpoint_that_is_down_gives_failed_rows_and_a_clear_failure(make_host, queue, run_as):
    from tests.service.live import free_port

    host = make_host("gpu-down", url=f"http://127.0.0.1:{free_port()}/v1")
    request = queue(host)
    assert _run(run_as, host, request) == states.FAILED
    assert request.failure_reason.startswith("every execution failed (1 rows, none ok): cannot connect to")
    assert request.submission is None and Submission.objects.count() == 0
    [row] = request.rows.all()
    assert row.ok is False and "cannot connect" in row.error


def test_a_name_that_resolves_off_the_allowlist_is_refused_before_any_request(make_host, queue, run_as, ref):
    host = make_host("gpu-dns", url=ref.url.replace("127.0.0.1", "localhost") + "/v1")
    host.endpoints.update(addresses=["127.0.0.2"])  # the operator meant another machine
    request = queue(host)
    assert _run(run_as, host, request) == states.FAILED
    assert "localhost resolves to 127.0.0.1" in request.failure_reason
    assert "none of these is on the allowlist (127.0.0.2)" in request.failure_reason
    assert ref.log() == [] and request.rows.count() == 0


def test_an_endpoint_removed_from_the_allowlist_after_queueing_is_not_called(host, queue, run_as, ref):
    request = queue(host)
    host.endpoints.update(enabled=False)
    assert _run(run_as, host, request) == states.FAILED
    assert "no longer on the allowlist" in request.failure_reason
    assert ref.log() == []


def _when(predicate, timeout_s=30.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return False


@pytest.mark.exclusive  # asserts a 2 s bound
def test_cancel_stops_a_running_request_within_two_seconds_and_keeps_its_rows(host, queue, run_as, ref, operator):
    ref.configure(responses=[{"tokens": 200}], ttft_s=0.005, itl_s=0.005)  # ~1 s per execution
    request = queue(host, pack="runtime-sweep")
    cancelled = {}

    def cancel_after_first_row():
        if _when(lambda: RunRequest.objects.get(pk=request.pk).rows.exists()):
            cancelled["answer"] = cancel_run_request(request.pk, operator)
            cancelled["at"] = time.monotonic()

    helper = threading.Thread(target=cancel_after_first_row)
    helper.start()
    outcome = _run(run_as, host, request)
    ended = time.monotonic()
    helper.join()
    assert cancelled["answer"] == "requested"
    assert outcome == states.CANCELLED
    assert ended - cancelled["at"] < 2.0, "cancel must stop the request in flight within a second or two"
    assert request.rows.count() >= 1
    assert f"{request.rows.count()} rows kept, never published" in request.failure_reason
    assert request.events.last().to_state == states.CANCELLED
    assert request.submission is None and Submission.objects.count() == 0
    assert len(ref.log()) < 12


def test_a_queued_request_is_cancelled_at_once_and_never_runs(host, queue, run_as, ref, operator):
    request = queue(host)
    assert cancel_run_request(request.pk, operator) == "cancelled"
    assert _run(run_as, host, request) == states.CANCELLED
    assert ref.log() == [] and request.attempts == 0


def test_the_time_limit_stops_a_run_and_fails_it(host, queue, run_as, ref):
    ref.configure(responses=[{"tokens": 300}], ttft_s=0.005, itl_s=0.005)
    request = queue(host, pack="runtime-sweep", time_limit_s=2)
    started = time.monotonic()
    assert _run(run_as, host, request) == states.FAILED
    assert time.monotonic() - started < 5
    assert request.failure_reason.startswith("time limit of 2 s reached after")
    assert request.submission is None


def test_a_registry_error_on_a_progress_call_does_not_end_the_benchmark(host, queue, run_as, ref, monkeypatch):
    from django.db import OperationalError

    from submissions.runqueue import claims

    real = claims.progress
    calls = []

    def locked_once(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise OperationalError("database is locked")  # the live server answers 500; the worker tries again
        return real(*args, **kwargs)

    monkeypatch.setattr(claims, "progress", locked_once)
    request = queue(host, pack="runtime-sweep")
    assert _run(run_as, host, request) == states.FINISHED
    assert len(calls) > 1 and request.rows.count() == 9
    assert request.submission.files.filter(path__endswith="run.jsonl").get().content.count("\n") == 9


@pytest.mark.parametrize("adapter, path", [("anthropic-messages", "/v1/messages"),
                                           ("openai-responses", "/v1/responses")])
def test_a_queued_run_speaks_the_endpoints_agent_protocol(make_host, queue, run_as, ref, adapter, path):
    """Issue 29: an endpoint registered with a coding agent's protocol is run with that adapter (the runner
    takes the adapter from the endpoint entry), and its rows say so."""
    from submissions.runqueue.models import ADAPTER_CHOICES, HostEndpoint

    assert (adapter, adapter) in ADAPTER_CHOICES
    host = make_host(adapter=adapter)
    HostEndpoint.objects.get(host=host).full_clean()  # the stored choice is a valid one
    request = queue(host)
    assert _run(run_as, host, request) == states.FINISHED, request.failure_reason
    assert {entry["path"] for entry in ref.log()} == {path}
    assert request.rows.count() >= 1 and all(row.ok for row in request.rows.all())
    assert {row.raw["adapter"] for row in request.rows.all()} == {adapter}
