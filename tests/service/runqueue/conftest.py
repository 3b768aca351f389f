"""Fixtures for the run queue: a registered runner host whose allowlist holds
the scripted reference endpoint, and a way to execute requests in-process as
that host's worker (the live tests start real workers instead)."""

from __future__ import annotations

import pytest

from benchpack.refserver.server import RefServer

MODEL = "scripted-demo"
REPLY = "The capital of France is Paris, and this scripted reply is long enough to time."


@pytest.fixture(scope="module")
def refserver():
    with RefServer(responses=[REPLY], ttft_s=0.005, itl_s=0.001) as server:
        yield server


@pytest.fixture
def ref(refserver):
    refserver.configure(responses=[REPLY], ttft_s=0.005, itl_s=0.001, scenario="ok")
    refserver.reset()
    return refserver


@pytest.fixture
def host_owner(make_user):
    return make_user("lab@example.org")


@pytest.fixture
def make_host(host_owner, ref):
    from submissions.runqueue.hosts import (allow_endpoint, allow_pack, approve_hardware, endpoint_fields,
                                            pack_entry_fields)
    from submissions.runqueue import tokens
    from submissions.runqueue.models import RunnerHost

    def make(name="gpu-a", url=None, owner=None, packs=("smoke-chat", "runtime-sweep"), approved=True,
             adapter="openai-chat"):
        host = RunnerHost.objects.create(name=name, owner=owner or host_owner)
        if approved:  # an operator approved this machine's class (the workers here run on it)
            approve_hardware(host, this_machine_class())
        tokens.issue(host)  # as `runner_host add` does (a host without a token can never take a request)
        allow_endpoint(host, "ref", **endpoint_fields(url or ref.url + "/v1", adapter, [f"{MODEL}=none"],
                                                      "benchpack-refserver", "scripted", ["127.0.0.1"]))
        for pack in packs:
            allow_pack(host, **pack_entry_fields(pack))
        return host

    return make


def this_machine_class() -> str:
    from benchpack.registry.fingerprint import hardware_class
    from benchpack.run.hardware import collect_hardware

    return hardware_class(collect_hardware()) or "unknown-test-machine"


@pytest.fixture
def host(make_host):
    return make_host()


@pytest.fixture
def host_client(live_server):
    """`host_client(host)`: the runner-host API client a host's worker holds (a fresh host token), talking HTTP
    to a live server of this test's database. Closed at the end of the test."""
    from submissions.runqueue import tokens
    from submissions.runqueue.runner.client import RegistryClient

    made = []

    def make(host, token=None):
        client = RegistryClient(live_server.url, token or tokens.issue(host))
        made.append(client)
        return client

    yield make
    for client in made:
        client.close()


@pytest.fixture
def run_as(host_client):
    """Execute a request in-process as `host`'s runner worker does: claim, run, report, finish, all over HTTP."""
    from submissions.runqueue.runner.execute import execute

    clients = {}

    def run(host, request_id):
        if host.pk not in clients:
            clients[host.pk] = host_client(host)
        return execute(clients[host.pk], str(request_id), f"test-worker-{host.name}")

    return run


@pytest.fixture
def queue(operator):
    """Create a request as the operator without executing it (no worker serves this process)."""
    from submissions.runqueue.services import create_run_request

    def make(host, pack="smoke-chat", user=None, **options):
        return create_run_request(user or operator, host=host.name, endpoint="ref", model=MODEL, pack=pack, **options)

    return make
