"""A pinned client reaches the allowlisted address and nothing else: not another
host, not a redirect target, not what a name resolves to on a later lookup."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from benchpack.adapters import AdapterRequest, get_adapter
from benchpack.adapters.pinned import AddressNotAllowed, PinnedTransport, pin_endpoint, system_resolver
from benchpack.adapters.transport import LeanClient


class _Recorder(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address, redirect_to=None):
        self.hits: list[str] = []
        self.redirect_to = redirect_to
        super().__init__(address, _Handler)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.server.hits.append(f"{self.headers['Host']} {self.path}")
        if self.server.redirect_to:
            self.send_response(307)
            self.send_header("Location", self.server.redirect_to)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = json.dumps({"choices": [{"index": 0, "message": {"role": "assistant", "content": "pinned"},
                                        "finish_reason": "stop"}],
                           "usage": {"prompt_tokens": 2, "completion_tokens": 1}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def serve():
    servers = []

    def start(host: str, port: int = 0, redirect_to: str | None = None) -> _Recorder:
        server = _Recorder((host, port), redirect_to)
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def _chat(url: str, client: httpx.Client):
    adapter = get_adapter("openai-chat", client)
    return adapter.run(AdapterRequest(model="m", prompt="hello there", endpoint=url, temperature=0,
                                      max_tokens=8, stream=False, timeout_s=5))


def test_it_pins_a_name_to_the_allowlisted_address_and_never_asks_dns_again(serve):
    good = serve("127.0.0.2")
    port = good.server_address[1]
    evil = serve("127.0.0.1", port)  # where `localhost` really resolves
    calls = []

    def first_lookup_only(host, port):
        calls.append(host)
        return ["127.0.0.2"]  # the lookup at pin time; later lookups would say 127.0.0.1

    pin = pin_endpoint(f"http://localhost:{port}/v1", ["127.0.0.2"], resolver=first_lookup_only)
    client = LeanClient(PinnedTransport(pin))
    for _ in range(3):
        result = _chat(f"http://localhost:{port}/v1", client)
        assert result.ok, result.error
        assert result.output_text == "pinned"
    assert calls == ["localhost"]
    assert good.hits == [f"localhost:{port} /v1/chat/completions"] * 3  # the Host header keeps the name
    assert evil.hits == []


def test_it_refuses_a_name_that_resolves_to_an_address_off_the_allowlist(serve):
    evil = serve("127.0.0.1")
    port = evil.server_address[1]
    assert "127.0.0.1" in system_resolver("localhost", port)
    with pytest.raises(AddressNotAllowed, match=r"localhost resolves to 127\.0\.0\.1.*none of these is on the allowlist \(127\.0\.0\.2\)"):
        pin_endpoint(f"http://localhost:{port}/v1", ["127.0.0.2"])
    assert evil.hits == []


def test_it_refuses_an_ip_literal_off_the_allowlist_and_a_url_with_credentials():
    with pytest.raises(AddressNotAllowed, match="address 10.0.0.9 is not on the allowlist"):
        pin_endpoint("http://10.0.0.9:8081/v1", ["10.0.0.8"])
    with pytest.raises(ValueError, match="credentials"):
        pin_endpoint("http://user:pw@10.0.0.8:8081/v1", ["10.0.0.8"])
    with pytest.raises(ValueError, match="only http"):
        pin_endpoint("file:///etc/passwd", ["10.0.0.8"])
    assert pin_endpoint("http://[::1]:8081/v1", ["0:0:0:0:0:0:0:1"]).address == "::1"


def test_it_refuses_a_redirect_and_never_contacts_its_target(serve):
    target = serve("127.0.0.1")
    redirector = serve("127.0.0.1", redirect_to=f"http://127.0.0.1:{target.server_address[1]}/v1/chat/completions")
    url = f"http://127.0.0.1:{redirector.server_address[1]}/v1"
    client = LeanClient(PinnedTransport(pin_endpoint(url, ["127.0.0.1"])))
    result = _chat(url, client)
    assert not result.ok
    assert "redirects are refused" in result.error and "HTTP 307" in result.error
    assert len(redirector.hits) == 1 and target.hits == []


def test_it_refuses_any_other_host_or_port_through_the_pinned_client(serve):
    allowed = serve("127.0.0.1")
    other = serve("127.0.0.1")
    url = f"http://127.0.0.1:{allowed.server_address[1]}/v1"
    client = LeanClient(PinnedTransport(pin_endpoint(url, ["127.0.0.1"])))
    for elsewhere in (f"http://127.0.0.1:{other.server_address[1]}/v1", f"http://localhost:{allowed.server_address[1]}/v1"):
        result = _chat(elsewhere, client)
        assert not result.ok and "is not the allowlisted endpoint" in result.error
    with pytest.raises(AddressNotAllowed):
        client.get(f"http://127.0.0.1:{other.server_address[1]}/")  # the full httpx path is pinned too
    assert other.hits == [] and allowed.hits == []


def test_it_serves_the_reference_endpoint_on_another_loopback_address():
    # The pinned transport's test above binds 127.0.0.2: make sure this machine routes it.
    proc = subprocess.Popen([sys.executable, "-m", "benchpack.refserver.server", "--host", "127.0.0.2", "--port", "0"],
                            stdout=subprocess.PIPE, text=True)
    try:
        url = proc.stdout.readline().rsplit(" ", 1)[1].strip()
        client = LeanClient(PinnedTransport(pin_endpoint(url, ["127.0.0.2"])))
        result = _chat(url + "/v1", client)
        assert result.ok, result.error
    finally:
        proc.terminate()
        proc.wait(timeout=5)
