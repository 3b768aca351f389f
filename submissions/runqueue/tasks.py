"""Celery tasks of the run queue, on the registry's side: thin entry points.

Runs themselves execute in runner workers (submissions.runqueue.runner),
which are not this Django project and reach the registry over its HTTP API.
Here only the reaper remains: beat calls it every minute for all hosts (each
host's heartbeat also recovers its own runs, submissions.runqueue.claims).
"""

from __future__ import annotations

import logging

from celery import shared_task

from submissions.runqueue.recovery import recover_lost_runs

log = logging.getLogger(__name__)


@shared_task(acks_late=True, ignore_result=True)
def reap_lost_runs() -> int:
    done = recover_lost_runs()
    if done:
        log.warning("run queue reaper: %s", done)
    return len(done)
