"""The runner worker's Celery app: `celery -A submissions.runqueue.runner.app worker -Q runs.<host> …`.

No Django. It consumes its own host's queue and nothing else, with remote
control, events, gossip and mingle off and no result backend: its broker
login (a RabbitMQ user limited to `runs.<host>`) allows nothing more, and
results go back over HTTPS. Started with a bad environment it exits with the
variable to fix.
"""

from __future__ import annotations

import logging
import os
import signal
import threading

from celery import Celery
from celery.signals import worker_ready, worker_shutdown

from submissions.runqueue.runner import config as runner_config
from submissions.runqueue.runner.client import RegistryClient, RegistryError, TokenRevoked
from submissions.runqueue.runner.execute import execute, worker_label

log = logging.getLogger(__name__)
EXECUTE_TASK = "benchpack.runner.execute_run_request"  # submissions.runqueue.services.EXECUTE_TASK

CONFIG = runner_config.load()
app = Celery("benchpack-runner", broker=CONFIG.broker_url)
app.conf.update(
    task_acks_late=True,
    task_reject_on_worker_lost=False,  # the registry's claim and reaper decide; a lost worker's run is retried there
    task_ignore_result=True,
    result_backend=None,
    worker_prefetch_multiplier=1,
    worker_concurrency=1,  # one benchmark at a time per machine
    worker_enable_remote_control=False,  # no celery.pidbox: the host's broker login covers runs.<host> only
    worker_send_task_events=False,
    task_send_sent_event=False,
    task_default_queue=CONFIG.queue,
    broker_connection_retry_on_startup=True,
    worker_hijack_root_logger=True,
)
if CONFIG.broker_dir is not None:  # the demo's filesystem broker: the registry's folders
    app.conf.broker_transport_options = {
        "data_folder_in": str(CONFIG.broker_dir / "queue"), "data_folder_out": str(CONFIG.broker_dir / "queue"),
        "processed_folder": str(CONFIG.broker_dir / "processed"), "control_folder": str(CONFIG.broker_dir / "control"),
        "store_processed": False,
    }
elif CONFIG.broker_url.startswith("redis"):
    app.conf.broker_transport_options = {"visibility_timeout": CONFIG.visibility_timeout_s}


def client() -> RegistryClient:
    return RegistryClient(CONFIG.registry_url, CONFIG.token)


@app.task(name=EXECUTE_TASK, bind=True, acks_late=True, reject_on_worker_lost=False, ignore_result=True)
def execute_run_request(self, request_id: str) -> str:
    registry = client()
    try:
        return execute(registry, str(request_id), worker_label(self.request.hostname))
    finally:
        registry.close()


class HostHeartbeat(threading.Thread):
    """In the worker's main process: the host is online, its hardware reported once, its lost runs
    recovered by the registry. A revoked token (401) stops the worker at once: SIGTERM to itself."""

    def __init__(self, worker_name: str):
        super().__init__(name=f"host-heartbeat-{CONFIG.host}", daemon=True)
        self.worker_name = worker_name
        self.stopping = threading.Event()

    def run(self) -> None:
        from benchpack.run.hardware import collect_hardware

        registry, reported = client(), False
        try:
            while True:
                try:
                    hardware = None if reported else collect_hardware(CONFIG.host)
                    answer = registry.host_heartbeat(self.worker_name, hardware)
                    reported = True
                    for request_id, outcome in answer.get("recovered", []):
                        log.warning("run request %s: %s (worker lost)", request_id, outcome)
                except TokenRevoked as exc:
                    log.error("runner host %s: %s; stopping this worker (manage.py runner_host rotate %s issues a "
                              "new token)", CONFIG.host, exc.message, CONFIG.host)
                    os.kill(os.getpid(), signal.SIGTERM)
                    return
                except RegistryError as exc:
                    log.warning("runner host heartbeat failed (%s); retrying", exc)
                if self.stopping.wait(CONFIG.heartbeat_s):
                    break
            try:
                registry.host_stopping(self.worker_name)
            except RegistryError:
                pass
        finally:
            registry.close()


_heartbeat: HostHeartbeat | None = None


def _consumed_queues(consumer) -> set[str]:
    try:
        return {queue.name for queue in consumer.task_consumer.queues}
    except AttributeError:
        return set()


@worker_ready.connect
def start_host_heartbeat(sender=None, **kwargs) -> None:
    global _heartbeat
    queues = _consumed_queues(sender)
    if queues and CONFIG.queue not in queues:
        log.error("BENCHPACK_RUNNER_HOST=%s but this worker consumes %s, not %s: start it with -Q %s",
                  CONFIG.host, ", ".join(sorted(queues)), CONFIG.queue, CONFIG.queue)
    _heartbeat = HostHeartbeat(getattr(sender, "hostname", "") or CONFIG.host)
    _heartbeat.start()


@worker_shutdown.connect
def stop_host_heartbeat(**kwargs) -> None:
    if _heartbeat is not None:
        _heartbeat.stopping.set()
        _heartbeat.join(timeout=5)
