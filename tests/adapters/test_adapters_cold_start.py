"""The first request of a fresh process times the request and nothing else.

Each probe is a new Python process that makes one adapter request against
the scripted endpoint, which records (on the same monotonic clock) when the
request arrived and when it sent the first token. Before the fix the
client was built inside the clock and a cold first request read ~0.1–0.2 s
of TTFT where the endpoint's own TTFT was 0.05 s.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from benchpack.refserver.server import RefServer

PROBE = """
import json, sys
from benchpack.adapters.base import AdapterRequest
from benchpack.adapters.{module} import {cls}
adapter = {cls}()
result, trace = adapter.run_traced(AdapterRequest(model="m", prompt="hi", endpoint=sys.argv[1],
                                                  stream={stream}, max_tokens=4))
print(json.dumps({{"ok": result.ok, "start": trace.start, "end": trace.end,
                   "ttft_s": result.timing["ttft_s"], "wall_s": result.timing["wall_s"]}}))
"""
SERVER_TTFT_S = 0.05
# Loopback send + the endpoint reading the request: well under a millisecond
# on a quiet machine; the slack is for a shared, loaded one. The fault this
# guards against cost 90–180 ms on the same machine.
ALLOWED_S = 0.02

ADAPTERS = {
    "openai-chat": ("openai_chat", "OpenAIChatAdapter", "openai_url"),
    "ollama-generate": ("ollama_generate", "OllamaGenerateAdapter", "ollama_url"),
}


@pytest.fixture(scope="module")
def server():
    with RefServer(ttft_s=SERVER_TTFT_S, itl_s=0.001) as srv:
        yield srv


def cold_probe(server, adapter_id: str, stream: bool) -> tuple[dict, dict]:
    module, cls, url_attr = ADAPTERS[adapter_id]
    server.reset()
    code = PROBE.format(module=module, cls=cls, stream=stream)
    done = subprocess.run([sys.executable, "-c", code, getattr(server, url_attr)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    client = json.loads(done.stdout)
    assert client["ok"]
    [record] = server.log()
    return client, record


@pytest.mark.parametrize("adapter_id", sorted(ADAPTERS))
def test_a_cold_processes_first_streamed_request_times_only_the_request(server, adapter_id):
    # The best of three fresh processes: one unlucky scheduling hiccup on a
    # shared machine must not fail the test, a systematic cost must.
    probes = [cold_probe(server, adapter_id, stream=True) for _ in range(3)]
    send_delays = [record["received_at"] - client["start"] for client, record in probes]
    ttft_errors = [client["ttft_s"] - (record["content_times"][0] - client["start"]) for client, record in probes]
    assert min(send_delays) < ALLOWED_S, send_delays
    assert min(abs(e) for e in ttft_errors) < ALLOWED_S, ttft_errors
    assert min(client["ttft_s"] for client, _ in probes) < SERVER_TTFT_S + ALLOWED_S


def test_a_cold_processes_first_plain_request_times_only_the_request(server):
    probes = [cold_probe(server, "openai-chat", stream=False) for _ in range(3)]
    server_wall = [record["sends"][-1][0] - record["received_at"] for _, record in probes]
    client_wall = [client["wall_s"] for client, _ in probes]
    assert min(c - s for c, s in zip(client_wall, server_wall)) < ALLOWED_S, (client_wall, server_wall)
