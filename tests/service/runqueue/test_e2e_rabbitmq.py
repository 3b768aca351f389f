"""Runner hosts on a real RabbitMQ: each host's broker login covers its own queue and nothing else.

Two registered hosts (their users made by `manage.py runner_host add` through
rabbitmqctl), the registry on granian + PostgreSQL/SQLite, real runner
workers (submissions.runqueue.runner) whose environment holds a host token
and a broker login and nothing of the registry's:

- host A's login cannot read, publish to or declare host B's queue (RabbitMQ
  answers ACCESS_REFUSED), nor passively declare it to learn its depth: each
  host has a vhost of its own, which A's login cannot open and where B's
  queue does not exist;
- the rogue worker of the issue — started on A's box as host B
  (BENCHPACK_RUNNER_HOST=gpu-b, -Q runs.gpu-b) with A's secrets — gets none of
  B's runs: the broker refuses it B's queue, and a message carrying B's request
  put on A's own queue is refused by the registry (403); B's run stays queued
  until B's own worker runs it, filed as its requester's submission;
- a revoked host stops within one heartbeat: the token answers 401, the
  broker user is gone, the worker process exits.
"""

from __future__ import annotations

import shutil
import subprocess
import time
import uuid

import httpx
import pytest

from benchpack.refserver.server import RefServer
from tests.environment import unavailable
from tests.service.live import start_live_service
from tests.service.runqueue.live_runners import MODEL, RunnerWorker, register, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
SUFFIX = uuid.uuid4().hex[:6]  # RabbitMQ users are server-wide: names of their own for this test run
A, B = f"gpu-a-{SUFFIX}", f"gpu-b-{SUFFIX}"
VHOST = f"benchpack-test-{SUFFIX}"


def _ctl(*args):
    return subprocess.run(["rabbitmqctl", "-q", *args], capture_output=True, text=True, timeout=60)


def require_rabbitmq():
    if shutil.which("rabbitmqctl") is None or _ctl("status").returncode != 0:
        unavailable("RabbitMQ is not running (apt install rabbitmq-server; rabbitmq-server -detached), or not as root")


@pytest.fixture(scope="module")
def ref():
    with RefServer(ttft_s=0.005, itl_s=0.001) as server:
        yield server


@pytest.fixture(scope="module")
def live(tmp_path_factory, ref):
    require_rabbitmq()
    assert _ctl("add_vhost", VHOST).returncode == 0
    assert _ctl("set_permissions", "-p", VHOST, "guest", ".*", ".*", ".*").returncode == 0
    service, stop = start_live_service(tmp_path_factory.mktemp("rabbit"), redis_db=11, env_overrides={
        "RUNNER_BROKER_URL": f"amqp://guest:guest@127.0.0.1:5672/{VHOST}", "RUN_HEARTBEAT_TIMEOUT_S": "8"})
    service.runners = []
    try:
        service.token = register(service, ref.url, (A, B))
        yield service
    finally:
        for runner in service.runners:
            runner.stop()
        stop()
        for host in (A, B):
            _ctl("delete_user", f"runner-{host}")
            _ctl("delete_vhost", f"{VHOST}.{host}")
        _ctl("delete_vhost", VHOST)


def _runner(live, host, name, **kwargs) -> RunnerWorker:
    runner = RunnerWorker(live, host, name, **kwargs)
    live.runners.append(runner)
    return runner


def _amqp(url):
    import amqp

    parts = httpx.URL(url)
    conn = amqp.Connection(host=f"{parts.host}:{parts.port or 5672}", userid=parts.username,
                           password=parts.password, virtual_host=parts.path.lstrip("/") or "/", connect_timeout=5)
    conn.connect()
    return conn


def _refused(action) -> str:
    import amqp

    with pytest.raises(amqp.exceptions.AccessRefused) as refused:
        action()
    return str(refused.value)


def _queue(live, host, pack="smoke-chat") -> dict:
    with live.api(live.token) as api:
        response = api.post("/api/v1/run-requests/", json={"host": host, "endpoint": "ref", "model": MODEL,
                                                            "pack": pack})
    assert response.status_code == 201, response.text
    return response.json()


def _get(live, request_id) -> dict:
    with live.api(live.token) as api:
        return api.get(f"/api/v1/run-requests/{request_id}/").json()


def test_add_printed_two_secrets_and_made_users_limited_to_their_queue(live):
    assert set(live.broker_logins) == {A, B}
    for host in (A, B):
        assert live.broker_logins[host].startswith(f"amqp://runner-{host}:")
        assert live.host_tokens[host].startswith("bph_")
    listed = _ctl("list_user_permissions", f"runner-{A}").stdout
    assert f"^runs\\.gpu\\-a\\-{SUFFIX}$" in listed or f"^runs\\.gpu-a-{SUFFIX}$" in listed, listed


def test_a_hosts_login_cannot_read_publish_to_or_declare_another_hosts_queue(live):
    import amqp

    # B's queue exists on RabbitMQ: the registry sent B's run request there (not to its Redis).
    _queue(live, B)
    queues = dict(line.split("\t") for line in _ctl("list_queues", "-p", f"{VHOST}.{B}", "name", "messages")
                  .stdout.splitlines() if "\t" in line and not line.startswith("name"))
    assert int(queues.get(f"runs.{B}", 0)) >= 1, queues
    conn = _amqp(live.broker_logins[A])
    try:
        own = conn.channel()
        own.queue_declare(f"runs.{A}", durable=True, auto_delete=False)  # its own: allowed
        assert "access to queue" in _refused(lambda: conn.channel().basic_get(f"runs.{B}"))
        assert "access to queue" in _refused(
            lambda: conn.channel().queue_declare(f"runs.{B}", durable=True, auto_delete=False))
        assert "access to queue" in _refused(lambda: conn.channel().queue_declare("runs.elsewhere"))

        def publish():
            channel = conn.channel()
            channel.basic_publish(amqp.Message(b"{}"), exchange=f"runs.{B}", routing_key=f"runs.{B}")
            channel.basic_qos(0, 1, False)  # a synchronous call: the refused publish closes the channel first
        assert "access to exchange" in _refused(publish)
    finally:
        conn.collect()
    # Nothing of B's was taken.
    with live.api(live.token) as api:
        queued = [r for r in api.get("/api/v1/run-requests/").json() if r["host"] == B]
    assert queued and all(r["state"] == "queued" and r["attempts"] == 0 for r in queued)


def test_the_rogue_worker_on_a_box_gets_none_of_bs_runs(live):
    request = _queue(live, B)
    # On gpu-a's box, with gpu-a's secrets, started as gpu-b.
    rogue = _runner(live, B, "ROGUE", token=live.host_tokens[A], broker_url=live.broker_logins[A])
    assert "DATABASE_URL" not in rogue.env and "SECRET_KEY" not in rogue.env
    wait_until(lambda: "ACCESS_REFUSED" in rogue.log() or rogue.proc.poll() is not None, timeout_s=60,
               what="the broker refusing the rogue worker gpu-b's queue")
    # gpu-a's real worker, fed a message for B's request on its own queue (A's login may publish there).
    a = _runner(live, A, A)
    wait_until(lambda: " ready." in a.log(), timeout_s=60, what="gpu-a's worker ready (its queue bound)")
    from celery import Celery
    from kombu import Connection, Exchange, Producer, Queue

    # A Celery task message for B's request, published with A's login onto A's own queue.
    headers, properties, body, _ = Celery(set_as_current=False).amqp.as_task_v2(
        "rogue-1", "benchpack.runner.execute_run_request", args=[request["id"]])
    with Connection(live.broker_logins[A]) as connection:
        own = Queue(f"runs.{A}", Exchange(f"runs.{A}", "direct"), routing_key=f"runs.{A}")
        Producer(connection).publish(body, exchange=own.exchange, routing_key=own.routing_key, declare=[own],
                                     headers=headers, serializer="json", **properties)
    wait_until(lambda: "delivery refused" in a.log(), timeout_s=60, what="gpu-a's worker refusing B's request")
    assert f"not assigned to runner host {A}" in a.log()
    time.sleep(1)
    body = _get(live, request["id"])
    assert body["state"] == "queued" and body["attempts"] == 0 and [e["to_state"] for e in body["events"]] == ["queued"]

    # gpu-b's own worker runs it; it is filed as the requester's submission.
    _runner(live, B, B)
    done = wait_until(lambda: (lambda b: b if b["state"] in {"finished", "failed"} else None)(_get(live, request["id"])),
                      timeout_s=120, what="B's request run by B")
    assert done["state"] == "finished", done
    assert done["submission"]["id"]
    with live.api(live.token) as api:
        submission = api.get(f"/api/v1/submissions/{done['submission']['id']}/")
    assert submission.status_code == 200  # the requester (OPS) sees it as theirs


def test_a_hosts_login_cannot_even_passively_see_another_hosts_queue(live):
    """A passive queue.declare needs no permission in RabbitMQ: in a shared vhost A's login could learn
    whether runs.<B> exists and how many messages wait in it. Each host's vhost of its own leaves nothing
    of B's to see from A's login, and B's vhost refuses A's login."""
    import amqp

    _queue(live, B)
    assert f"{VHOST}.{A}" in live.broker_logins[A] and f"{VHOST}.{B}" in live.broker_logins[B]
    conn = _amqp(live.broker_logins[A])
    try:
        with pytest.raises(amqp.exceptions.NotFound):  # in A's vhost, B's queue does not exist at all
            conn.channel().queue_declare(f"runs.{B}", passive=True)
    finally:
        conn.collect()
    b_vhost_with_a_login = live.broker_logins[A].rsplit("/", 1)[0] + f"/{VHOST}.{B}"
    with pytest.raises((amqp.exceptions.AccessRefused, amqp.exceptions.ConnectionForced, amqp.exceptions.NotAllowed)):
        _amqp(b_vhost_with_a_login)
    # B's own login sees its queue, its depth and its consumers (what A was able to see before).
    conn = _amqp(live.broker_logins[B])
    try:
        _, messages, consumers = conn.channel().queue_declare(f"runs.{B}", passive=True)
        assert messages + consumers >= 1  # B's worker (started above) may have taken the message already
    finally:
        conn.collect()


def test_a_revoked_host_stops_within_one_heartbeat(live):
    worker = next((r for r in live.runners if r.name == A and r.proc.poll() is None), None) or _runner(live, A, A)
    wait_until(lambda: " ready." in worker.log(), timeout_s=60, what="gpu-a ready")
    revoked_at = time.monotonic()
    out = live.manage("runner_host", "revoke", A)
    assert "host token ended" in out and f"RabbitMQ user runner-{A} deleted" in out
    wait_until(lambda: worker.proc.poll() is not None, timeout_s=20, interval_s=0.1, what="gpu-a's worker exiting")
    stopped_in = time.monotonic() - revoked_at
    assert stopped_in < 1.0 + 15, stopped_in  # one heartbeat (1 s here) plus the warm shutdown
    # Whichever ends it first: the registry's 401 to the heartbeat, or the broker closing the deleted user's
    # connection and refusing its login.
    assert "revoked host token" in worker.log() or "ACCESS_REFUSED - Login was refused" in worker.log()
    print(f"gpu-a's worker stopped {stopped_in:.1f} s after revoke")
    answer = httpx.post(live.url + "/api/runner/v1/heartbeat/", json={"worker": "x"},
                        headers={"Authorization": f"Bearer {live.host_tokens[A]}"})
    assert answer.status_code == 401
    import amqp

    with pytest.raises(amqp.exceptions.AccessRefused):
        _amqp(live.broker_logins[A])

