"""A run whose worker went silent: retried once by policy, then failed "worker lost";
never two submissions. (With a real SIGKILLed worker: test_e2e_workers.py.)"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from submissions.models import Submission
from submissions.runqueue import states
from submissions.runqueue.models import RunRequest
from submissions.runqueue.recovery import recover_lost_runs

pytestmark = pytest.mark.django_db(transaction=True)


def _lose_worker(request, *, silent_s=3600, cancel=False, started_s=60):
    """What a worker killed mid-run leaves: running, its claim, a heartbeat that stopped."""
    now = timezone.now()
    RunRequest.objects.filter(pk=request.pk).update(
        state=states.RUNNING, attempts=request.attempts + 1, claim_token="6f1c8e62-0000-4000-8000-000000000001",
        claimed_by="gpu-a@box pid 4242", started_at=now - timedelta(seconds=started_s),
        heartbeat_at=now - timedelta(seconds=silent_s), cancel_requested_at=now if cancel else None,
    )


def test_a_lost_run_is_retried_once_then_runs_to_one_submission(host, queue, run_as):
    request = queue(host)
    _lose_worker(request)
    assert recover_lost_runs() == [(str(request.pk), "retried")]
    request.refresh_from_db()
    assert request.state == states.QUEUED and request.claim_token is None and request.attempts == 1
    assert "worker lost (gpu-a@box pid 4242 sent no heartbeat for 3600 s); retrying: attempt 2 of 2" in request.events.get(from_state=states.RUNNING, to_state=states.QUEUED).reason

    assert run_as(host, request.pk) == states.FINISHED
    request.refresh_from_db()
    assert request.attempts == 2 and Submission.objects.count() == 1


def test_a_run_lost_on_its_last_attempt_fails_with_worker_lost(host, queue):
    request = queue(host)
    RunRequest.objects.filter(pk=request.pk).update(attempts=1)
    request.refresh_from_db()
    _lose_worker(request)
    assert recover_lost_runs() == [(str(request.pk), states.FAILED)]
    request.refresh_from_db()
    assert request.state == states.FAILED
    assert request.failure_reason.startswith("worker lost (gpu-a@box pid 4242 sent no heartbeat")
    assert "on attempt 2 of 2; not retried" in request.failure_reason
    assert Submission.objects.count() == 0


def test_a_redelivery_after_the_attempts_are_used_up_fails_instead_of_looping(host, queue, run_as):
    request = queue(host)
    RunRequest.objects.filter(pk=request.pk).update(attempts=2)
    assert run_as(host, request.pk) == states.FAILED
    request.refresh_from_db()
    assert request.failure_reason == "attempts used up (2 of 2)"


def test_a_live_run_and_a_cancelled_lost_run_are_told_apart(make_host, host, queue):
    live = queue(host)
    _lose_worker(live, silent_s=1)
    other = make_host("gpu-b")
    cancelled = queue(other)
    _lose_worker(cancelled, cancel=True)
    assert recover_lost_runs() == [(str(cancelled.pk), states.CANCELLED)]
    assert RunRequest.objects.get(pk=live.pk).state == states.RUNNING


def test_a_lost_run_past_its_time_limit_fails_rather_than_retrying(host, queue):
    request = queue(host, time_limit_s=30)
    _lose_worker(request, started_s=120)
    assert recover_lost_runs() == [(str(request.pk), states.FAILED)]
    assert "time limit of 30 s passed" in RunRequest.objects.get(pk=request.pk).failure_reason


def test_a_request_whose_message_never_left_is_sent_by_the_reaper(host, queue):
    request = queue(host)
    RunRequest.objects.filter(pk=request.pk).update(sent_at=None, created_at=timezone.now() - timedelta(minutes=5))
    assert recover_lost_runs() == [(str(request.pk), "sent")]
    assert RunRequest.objects.get(pk=request.pk).sent_at is not None


def test_the_command_lists_lost_runs_without_changing_them(host, queue, capsys):
    request = queue(host)
    _lose_worker(request)
    call_command("reap_runs", "--dry-run")
    assert f"would recover {request.pk}" in capsys.readouterr().out
    assert RunRequest.objects.get(pk=request.pk).state == states.RUNNING
    call_command("reap_runs")
    assert RunRequest.objects.get(pk=request.pk).state == states.QUEUED
