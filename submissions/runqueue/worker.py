"""Celery worker hooks for runner hosts (connected when the tasks module loads).

A worker started with BENCHPACK_RUNNER_HOST=<name> must consume `runs.<name>`
and should consume nothing else; it then keeps the host's heartbeat.
"""

from __future__ import annotations

import logging

from celery.signals import worker_ready, worker_shutdown
from django.conf import settings

log = logging.getLogger(__name__)
_heartbeat = None


def _consumed_queues(consumer) -> set[str]:
    try:
        return {queue.name for queue in consumer.task_consumer.queues}
    except AttributeError:
        return set()


@worker_ready.connect
def start_host_heartbeat(sender=None, **kwargs) -> None:
    global _heartbeat
    host = settings.RUNNER_HOST
    if not host:
        return
    queues = _consumed_queues(sender)
    wanted = f"runs.{host}"
    if queues and wanted not in queues:
        log.error("BENCHPACK_RUNNER_HOST=%s but this worker consumes %s, not %s: start it with -Q %s",
                  host, ", ".join(sorted(queues)), wanted, wanted)
    extra = queues - {wanted}
    if extra:
        log.warning("runner worker for %s also consumes %s: validations would share the machine with benchmarks",
                    host, ", ".join(sorted(extra)))
    from submissions.runqueue.hosts import HostHeartbeat

    _heartbeat = HostHeartbeat(host, getattr(sender, "hostname", "") or host)
    _heartbeat.start()


@worker_shutdown.connect
def stop_host_heartbeat(**kwargs) -> None:
    if _heartbeat is not None:
        _heartbeat.stopping.set()
        _heartbeat.join(timeout=5)
