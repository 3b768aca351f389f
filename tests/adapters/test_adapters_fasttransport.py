import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchpack.adapters import wire
from benchpack.adapters.chunked import ChunkedDecoder, chunked_pieces, read_chunked_arrivals
from benchpack.adapters.fasttransport import FastHTTPTransport
from benchpack.adapters.wire import Conn as _Conn
from benchpack.adapters.wire import sized as _sized
from benchpack.refserver.server import RefServer


class FakeConn:
    """The two things the body decoders use: a carried-over buffer and recv()."""

    def __init__(self, pieces):
        self.buf = b""
        self.pieces = list(pieces)

    def recv(self):
        if not self.pieces:
            raise httpx.RemoteProtocolError("peer closed connection without sending complete message body")
        return self.pieces.pop(0)


def encode_chunked(body: bytes, sizes: list[int], extension: bool) -> bytes:
    out, pos = b"", 0
    for size in sizes:
        piece = body[pos:pos + size]
        if not piece:
            break
        out += b"%x%s\r\n%s\r\n" % (len(piece), b";ext=1" if extension else b"", piece)
        pos += len(piece)
    if pos < len(body):
        out += b"%X\r\n%s\r\n" % (len(body) - pos, body[pos:])
    return out + b"0\r\n\r\n"


def split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    return [p for p in (data[a:b] for a, b in zip([0, *points], [*points, len(data)])) if p]


@settings(max_examples=150, deadline=None)
@given(body=st.binary(max_size=300), sizes=st.lists(st.integers(1, 40), max_size=10), extension=st.booleans(),
       cuts=st.lists(st.integers(0, 10_000), max_size=10), after=st.binary(max_size=8))
def test_it_decodes_any_chunked_body_however_the_wire_bytes_are_split(body, sizes, extension, cuts, after):
    conn = FakeConn(split(encode_chunked(body, sizes, extension) + after, cuts))
    decoded = b"".join(chunked_pieces(conn))
    assert decoded == body
    # Whatever follows the body (the next response on a kept-alive connection) stays buffered.
    assert conn.buf + b"".join(conn.pieces) == after


def test_it_reports_a_body_cut_short_as_a_protocol_error():
    conn = FakeConn([b"5\r\nhel"])
    with pytest.raises(httpx.RemoteProtocolError):
        b"".join(chunked_pieces(conn))


def test_it_rejects_a_malformed_chunk_size():
    with pytest.raises(wire.RemoteProtocolError, match="chunk size"):
        b"".join(chunked_pieces(FakeConn([b"zz\r\nhello\r\n0\r\n\r\n"])))


def test_it_reads_exactly_content_length_bytes_and_keeps_the_rest():
    conn = FakeConn([b"hel", b"lo!NEXT"])
    assert b"".join(_sized(conn, 6)) == b"hello!"
    assert conn.buf == b"NEXT"


def test_it_reuses_one_connection_for_sequential_requests_and_handles_each_framing():
    with RefServer(responses=["a b c"], ttft_s=0.001, itl_s=0.0005) as srv:
        transport = FastHTTPTransport()
        with httpx.Client(transport=transport) as client:
            body = {"model": "m", "messages": [{"role": "user", "content": "x"}]}
            streamed = client.post(srv.openai_url, json={**body, "stream": True})  # chunked
            plain = client.post(srv.openai_url, json={**body, "stream": False})    # Content-Length
            missing = client.get(srv.url + "/nowhere")
            assert streamed.status_code == 200 and b"data: [DONE]" in streamed.content
            assert plain.json()["choices"][0]["message"]["content"] == "a b c"
            assert missing.status_code == 404
            assert sum(len(conns) for conns in transport._idle.values()) == 1


def test_it_maps_a_refused_connection_to_httpx_connect_error():
    with httpx.Client(transport=FastHTTPTransport()) as client:
        with pytest.raises(httpx.ConnectError):
            client.get("http://127.0.0.1:9/")


class FakeSock:
    """recv() hands out the scripted wire pieces; None, or running out, is a quiet kernel tick."""

    def __init__(self, pieces):
        self.pieces = list(pieces)
        self.ticks = 0

    def recv(self, _size):
        piece = self.pieces.pop(0) if self.pieces else None
        if piece is None:
            self.ticks += 1
            raise BlockingIOError(11, "Resource temporarily unavailable")
        return piece


def timed_conn(wire_pieces, leftover=b"", read_timeout=10.0):
    conn = _Conn(FakeSock(wire_pieces), ("h", 1))
    conn.buf, conn.read_timeout = leftover, read_timeout
    return conn


def read_timed(wire_pieces, leftover=b""):
    conn = timed_conn(wire_pieces, leftover)
    times, reads = [], []
    stop = read_chunked_arrivals(conn, ChunkedDecoder(), times, reads, float("inf"))
    return stop, times, reads, conn


@settings(max_examples=150, deadline=None)
@given(body=st.binary(max_size=300), sizes=st.lists(st.integers(1, 40), max_size=10), extension=st.booleans(),
       cuts=st.lists(st.integers(0, 10_000), max_size=10), after=st.binary(max_size=8), head_cut=st.integers(0, 30))
def test_it_times_any_chunked_body_the_same_as_it_decodes_it(body, sizes, extension, cuts, after, head_cut):
    wire = encode_chunked(body, sizes, extension) + after
    # Some of the body may already sit in the buffer from reading the response head.
    leftover, rest = wire[:head_cut], wire[head_cut:]
    stop, times, reads, conn = read_timed(split(rest, cuts), leftover)
    assert stop == "end" and b"".join(reads) == body
    assert len(times) == len(reads) and all(reads) and times == sorted(times)
    assert conn.buf + b"".join(conn.sock.pieces) == after and conn.complete


def test_it_hands_up_one_piece_per_network_read_that_carried_body_bytes():
    wire = [b"5\r\nhello\r\n", b"3\r\nabc\r\n2\r\nde\r\n", b"1\r", b"\nz\r\n", b"0\r\n\r\n"]
    stop, times, reads, _ = read_timed(wire)
    assert reads == [b"hello", b"abcde", b"z"]


@pytest.mark.parametrize("ending", [[b"0\r\n\r\n"], [b"0\r\n", b"\r\n"], [b"0\r\n\r", b"\n"], [b"0", b"\r\n\r\n"]])
def test_it_sees_the_end_of_the_body_at_once_however_the_last_chunk_is_split(ending):
    # llama-server writes "0\r\n" and "\r\n" apart; waiting for a quiet tick there would stretch wall_s.
    stop, _, reads, conn = read_timed([b"5\r\nhello\r\n", *ending])
    assert stop == "end" and reads == [b"hello"] and conn.sock.ticks == 0


def test_it_pauses_when_the_stream_goes_quiet_and_can_go_on():
    conn = timed_conn([b"2\r\nok\r\n", None, None, b"1\r\nx\r\n0\r\n\r\n"])
    decoder, times, reads = ChunkedDecoder(), [], []
    assert read_chunked_arrivals(conn, decoder, times, reads, float("inf")) == "pause"
    assert reads == [b"ok"]
    # Another quiet tick with nothing new is no reason to pause again.
    assert read_chunked_arrivals(conn, decoder, times, reads, float("inf")) == "end"
    assert reads == [b"ok", b"x"] and conn.complete


def test_it_times_out_a_stream_quiet_for_longer_than_the_read_timeout_and_keeps_what_arrived():
    conn = timed_conn([b"2\r\nok\r\n", None, None, None], read_timeout=0.0)
    times, reads = [], []
    with pytest.raises(wire.ReadTimeout):
        read_chunked_arrivals(conn, ChunkedDecoder(), times, reads, float("inf"))
    assert reads == [b"ok"]


def test_it_reports_a_peer_that_closes_mid_body_as_a_protocol_error():
    with pytest.raises(wire.RemoteProtocolError):
        read_timed([b"5\r\nhel", b""])


def test_it_turns_an_expired_kernel_read_timeout_into_httpx_read_timeout():
    import socket

    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        transport = FastHTTPTransport()
        with httpx.Client(transport=transport, timeout=httpx.Timeout(5.0, read=0.2)) as client:
            # Accepted by the kernel's backlog, never answered.
            with pytest.raises(httpx.ReadTimeout):
                client.get(f"http://127.0.0.1:{listener.getsockname()[1]}/")


def capture_requests(count):
    """A one-connection server that records each request head+body and answers with a small SSE stream."""
    import socket
    import threading

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    seen = []

    def serve():
        conn, _ = listener.accept()
        with conn, listener:
            buf = b""
            for _ in range(count):
                while b"\r\n\r\n" not in buf:
                    buf += conn.recv(65536)
                head, buf = buf.split(b"\r\n\r\n", 1)
                length = int(next(line.split(b":")[1] for line in head.split(b"\r\n")
                                  if line.lower().startswith(b"content-length")))
                while len(buf) < length:
                    buf += conn.recv(65536)
                seen.append(head + b"\r\n\r\n" + buf[:length])
                buf = buf[length:]
                body = b'data: {"choices":[{"delta":{"content":"hi"},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n"
                             b"\r\n%x\r\n%s\r\n0\r\n\r\n" % (len(body), body))

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return f"http://127.0.0.1:{listener.getsockname()[1]}/v1/chat/completions", seen, thread


def test_it_sends_the_same_request_on_the_short_path_as_through_httpx_client():
    from benchpack.adapters.transport import JSON_STREAM_HEADERS, LeanClient, post_stream

    url, seen, thread = capture_requests(2)
    client = LeanClient()
    assert client.can_go_direct(url)
    with post_stream(client, url, b'{"stream":true}', 5.0) as direct:
        direct_body = direct.read()
    with client.stream("POST", url, content=b'{"stream":true}', timeout=5.0, headers=JSON_STREAM_HEADERS) as full:
        full_body = full.read()
    thread.join(5)
    client.close()
    assert seen[0] == seen[1] and b"POST /v1/chat/completions HTTP/1.1" in seen[0]
    assert direct_body == full_body and direct.status_code == full.status_code == 200


def test_it_takes_the_full_httpx_path_once_the_client_is_no_longer_plain():
    from benchpack.adapters.transport import LeanClient

    client = LeanClient()
    assert client.can_go_direct("http://h:1/v1") and not client.can_go_direct("https://h:1/v1")
    client.cookies.set("session", "x")
    assert not client.can_go_direct("http://h:1/v1")
    client = LeanClient()
    client.headers["Authorization"] = "Bearer k"
    assert not client.can_go_direct("http://h:1/v1")


def _closing_server(responses: int):
    """A server like llama-server after a stream: it answers, then closes the
    connection a moment later without `Connection: close`."""
    import socket
    import threading
    import time

    listener = socket.create_server(("127.0.0.1", 0))
    requests_seen = []

    def serve():
        for _ in range(responses):
            conn, _ = listener.accept()
            data = b""
            while b"\r\n\r\n" not in data:
                data += conn.recv(65536)
            requests_seen.append(data.split(b"\r\n", 1)[0])
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            time.sleep(0.05)  # the close comes after the client already reused the connection
            conn.close()
        listener.close()

    threading.Thread(target=serve, daemon=True).start()
    return listener.getsockname()[1], requests_seen


def test_it_resends_on_a_fresh_connection_when_a_pooled_one_was_closed_unanswered():
    port, seen = _closing_server(responses=3)
    with httpx.Client(transport=FastHTTPTransport()) as client:
        bodies = []
        for _ in range(3):  # back to back: each reuse races the server's close, and loses
            bodies.append(client.get(f"http://127.0.0.1:{port}/x").text)
    assert bodies == ["ok", "ok", "ok"]
    assert len(seen) == 3  # every request answered exactly once


def test_it_does_not_resend_on_a_fresh_connection_that_closes_unanswered():
    import socket
    import threading

    listener = socket.create_server(("127.0.0.1", 0))
    accepted = []

    def serve():
        conn, _ = listener.accept()
        accepted.append(conn.recv(65536))
        conn.close()
        listener.settimeout(1)
        try:
            listener.accept()
            accepted.append(b"second")
        except OSError:
            pass
        listener.close()

    threading.Thread(target=serve, daemon=True).start()
    with httpx.Client(transport=FastHTTPTransport()) as client, pytest.raises(httpx.RemoteProtocolError):
        client.get(f"http://127.0.0.1:{listener.getsockname()[1]}/")
    import time

    time.sleep(1.2)
    assert len(accepted) == 1
