"""The plain path (wire.PlainClient, no httpx) and the httpx path fail with the same words and send the same request.

An adapter with no injected client sends to an http:// endpoint through
wire.PlainClient; given an httpx client (a runner host's pinned one) or an
https:// endpoint, through httpx. A person reading a row's error must not
be able to tell which: each failure below is met on both paths and the
messages compared.
"""

import json
import socket
import threading
import time

import httpx
import pytest

from benchpack.adapters import AdapterRequest, wire
from benchpack.adapters.ollama_generate import OllamaGenerateAdapter
from benchpack.adapters.openai_chat import OpenAIChatAdapter
from benchpack.adapters.transport import LeanClient
from benchpack.refserver.server import RefServer
from benchpack.run import server_info

EVENT = b'data: {"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}\n\n'


def read_request(conn: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        piece = conn.recv(65536)
        if not piece:
            return data
        data += piece
    head, _, body = data.partition(b"\r\n\r\n")
    length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                   if line.lower().startswith(b"content-length:")), 0)
    while len(body) < length:
        body += conn.recv(65536)
    return head + b"\r\n\r\n" + body


class Scripted:
    """A server that answers every connection with `script(conn)` after reading one request; records the requests."""

    def __init__(self, script):
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(0.2)
        self.script = script
        self.requests: list[bytes] = []
        self.held: list[socket.socket] = []
        self._stop = False
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}/v1/chat/completions"

    def _serve(self):
        while not self._stop:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                continue
            self.requests.append(read_request(conn))
            if self.script(conn) == "hold":
                self.held.append(conn)  # left open and silent
            else:
                conn.close()

    def close(self):
        self._stop = True
        self.thread.join(5)
        for conn in self.held:
            conn.close()
        self.listener.close()


def closes_mid_stream(conn):
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
                 + b"%x\r\n%s\r\n" % (len(EVENT), EVENT))
    time.sleep(0.05)


def stalls_mid_stream(conn):
    closes_mid_stream(conn)
    return "hold"


def never_answers(conn):
    return "hold"


def closes_unanswered(conn):
    pass


def answers_garbage(conn):
    conn.sendall(b"SPDY/9 what\r\n\r\n")


def closes_mid_sized_body(conn):
    conn.sendall(b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 100\r\n\r\n{\"error\":")


def request(url, timeout_s=5.0, stream=True):
    return AdapterRequest(model="m", prompt="hello", endpoint=url, max_tokens=4, stream=stream, timeout_s=timeout_s)


def both_paths(adapter_class, req):
    """(plain adapter's result, httpx adapter's result) for the same request."""
    plain = adapter_class()
    with_httpx = adapter_class(LeanClient())
    try:
        first = plain.run(req)
        second = with_httpx.run(req)
    finally:
        plain.close()
        with_httpx.close()
    assert plain._plain is not None and plain._client is None, "no injected client, http://: the plain path"
    return first, second


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_refused_connection_reads_the_same_on_both_paths():
    plain, via_httpx = both_paths(OpenAIChatAdapter, request(f"http://127.0.0.1:{closed_port()}/v1"))
    assert plain.error == via_httpx.error
    assert plain.error.startswith("cannot connect to http://127.0.0.1:") and "refused" in plain.error


@pytest.mark.parametrize("script, expected", [
    (closes_mid_stream, "connection closed mid-stream after 1 events: peer closed connection without sending "
                        "complete message body"),
    # The request's deadline passes with the read timeout: the stream's own words.
    (stalls_mid_stream, "timed out after 0.6s (stream still running, 1 events received)"),
    (never_answers, "timed out after 0.6s waiting for {url} (0 events received)"),
    (closes_unanswered, "connection closed by {url}: server closed the connection without a response"),
    (answers_garbage, "connection closed by {url}: malformed status line: b'SPDY/9 what'"),
])
def test_a_broken_server_reads_the_same_on_both_paths(script, expected):
    server = Scripted(script)
    try:
        plain, via_httpx = both_paths(OpenAIChatAdapter, request(server.url, timeout_s=0.6))
    finally:
        server.close()
    assert plain.error == via_httpx.error == expected.format(url=server.url)
    assert plain.output_text == via_httpx.output_text
    assert plain.response_payload == via_httpx.response_payload


def test_a_body_cut_short_reads_the_same_on_both_paths():
    server = Scripted(closes_mid_sized_body)
    try:
        plain, via_httpx = both_paths(OllamaGenerateAdapter, request(server.url.replace("/v1/chat/completions", ""),
                                                                     stream=False))
    finally:
        server.close()
    assert plain.error == via_httpx.error
    assert plain.error.startswith("connection closed by ")


def test_both_paths_send_the_same_request_but_for_the_user_agent():
    def answer(conn):
        body = EVENT + b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: %d\r\nConnection: close"
                     b"\r\n\r\n%s" % (len(body), body))

    server = Scripted(answer)
    try:
        plain, via_httpx = both_paths(OpenAIChatAdapter, request(server.url + "?key=v%2F1"))
    finally:
        server.close()
    assert plain.ok and via_httpx.ok and plain.output_text == via_httpx.output_text == "hi"
    heads = [r.split(b"\r\n") for r in server.requests]
    agents = [[line for line in head if line.startswith(b"User-Agent:")] for head in heads]
    assert agents[0] == [b"User-Agent: benchpack/" + __import__("benchpack").__version__.encode()]
    assert agents[1][0].startswith(b"User-Agent: python-httpx/")
    assert [line for line in heads[0] if not line.startswith(b"User-Agent:")] == \
        [line for line in heads[1] if not line.startswith(b"User-Agent:")]
    assert heads[0][0] == b"POST /v1/chat/completions?key=v%2F1 HTTP/1.1"


@pytest.mark.exclusive  # asserts TTFT/TPOT bounds of tens of ms
def test_a_real_stream_is_timed_alike_on_both_paths():
    with RefServer(ttft_s=0.02, itl_s=0.005, default_tokens=6) as srv:
        plain, via_httpx = both_paths(OpenAIChatAdapter, request(srv.openai_url))
        assert plain.ok and via_httpx.ok
        assert plain.tokens == via_httpx.tokens and plain.output_text == via_httpx.output_text
        for result in (plain, via_httpx):
            assert 0.015 < result.timing["ttft_s"] < 0.2 and 0.003 < result.timing["tpot_s"] < 0.05


def test_https_and_urls_the_plain_client_would_not_write_as_httpx_does_take_the_httpx_path():
    port = closed_port()
    for url in (f"https://127.0.0.1:{port}/v1", f"http://127.0.0.1:{port}/v1/a%zz", f"http://u:p@127.0.0.1:{port}/v1",
                f"http://127.0.0.1:{port}/v1/é"):
        adapter = OpenAIChatAdapter()
        try:
            result = adapter.run(request(url))
        finally:
            adapter.close()
        assert adapter._plain is None and isinstance(adapter._client, LeanClient), url
        assert result.error.startswith("cannot connect to "), result.error
    assert wire.plain_url("http://[::1]:8080/v1?x=1") and wire.plain_url("http://localhost")
    assert not wire.plain_url("http://host:99999/") and not wire.plain_url("http://") and not wire.plain_url("ftp://h/")


def test_the_probes_record_the_same_on_both_paths():
    with RefServer(ttft_s=0.001, itl_s=0.001, models=["ref"]) as srv:
        plain = server_info.probe_server("openai-chat", srv.openai_url, "ref")
        with httpx.Client() as client:
            via_httpx = server_info.probe_server("openai-chat", srv.openai_url, "ref", client=client)
    assert plain.probes == via_httpx.probes and plain.served_models == via_httpx.served_models == ["ref"]
    assert plain.scripted and via_httpx.scripted
    silent = f"http://127.0.0.1:{closed_port()}"
    plain = server_info.probe_server("ollama-generate", silent, "m")
    with httpx.Client() as client:
        via_httpx = server_info.probe_server("ollama-generate", silent, "m", client=client)
    assert plain.probes == via_httpx.probes
    assert plain.probes[0] == {"request": "GET /api/version", "result": "no answer (ConnectError)"}


def test_the_plain_client_reads_every_framing_and_decodes_what_a_server_compressed_anyway():
    import gzip
    import zlib

    bodies = {
        b"/sized": b"Content-Length: 5\r\n\r\nhello",
        b"/chunked": b"Transfer-Encoding: chunked\r\n\r\n2\r\nhe\r\n3\r\nllo\r\n0\r\n\r\n",
        b"/gzip": b"Content-Encoding: gzip\r\nContent-Length: %d\r\n\r\n" % len(gzip.compress(b"hello"))
                  + gzip.compress(b"hello"),
        b"/deflate": b"Content-Encoding: deflate\r\nContent-Length: %d\r\n\r\n" % len(zlib.compress(b"hello"))
                     + zlib.compress(b"hello"),
        b"/close": b"Connection: close\r\n\r\nhello",
    }

    def answer(conn):
        path = server.requests[-1].split(b" ")[1]
        conn.sendall(b"HTTP/1.1 200 OK\r\nX-Twice: a\r\nx-twice: b\r\n" + bodies[path])

    server = Scripted(answer)
    client = wire.PlainClient()
    try:
        base = server.url.rsplit("/v1", 1)[0]
        for path in bodies:
            response = client.request("GET", base + path.decode())
            assert response.read() == b"hello", path
            assert response.headers.get("X-TWICE") == "a, b" and "x-twice" in response.headers
        response = client.request("POST", base + "/sized", json={"model": "m"})
        assert json.loads(server.requests[-1].split(b"\r\n\r\n", 1)[1]) == {"model": "m"}
    finally:
        client.close()
        server.close()
    with pytest.raises(ValueError, match="not a plain http:// URL"):
        wire.PlainClient().request("GET", "https://example.org/")


@pytest.mark.parametrize("host", [
    "127.0.0.1", "localhost", "LocalHost", "::1", "fe80::1%eth0", "a.b.c", "example.com.", "x" * 63 + ".com",
    "x" * 64 + ".com", "a..b", ".a", "a." + "y" * 64, "y" * 63, "y" * 64, "a.b..", "münchen.de", "", "a\x00b",
])
def test_a_host_is_looked_up_as_the_idna_codec_would_encode_it_or_passed_to_it_as_given(host):
    """wire.lookup_host makes the idna codec's bytes itself for ASCII names (the codec is not imported by a
    run); whatever it leaves as str, the codec encodes or refuses exactly as before."""
    looked_up = wire.lookup_host(host)
    if isinstance(looked_up, bytes):
        assert looked_up == host.encode("idna")
    else:
        assert looked_up == host
        try:
            host.encode("idna")
        except UnicodeError:
            return  # refused by the codec, with its own words, as socket.getaddrinfo would
        assert host == "" or not host.isascii()  # only the empty and non-ASCII names go to the codec to encode


def test_a_name_the_codec_refuses_fails_to_connect_with_the_same_words_as_before():
    too_long = "x" * 64 + ".invalid"
    with pytest.raises(UnicodeError) as direct:
        socket.create_connection((too_long, 80), timeout=1)
    with pytest.raises(UnicodeError) as pooled:
        wire.Pool().acquire((too_long, 80), 1)
    assert str(pooled.value) == str(direct.value) and "label empty or too long" in str(direct.value)
