"""A lean HTTP/1.1 transport for httpx, for plain-http streaming.

Why it exists: measured side by side (docs/measurement.md), httpx's default
transport (httpcore + h11, pure-Python framing) costs several times more CPU
per streamed chunk than the socket read itself, and that cost shows up as
TTFT/TPOT error on fast local servers. This transport keeps httpx as the
client API (URLs, headers, timeouts, error types, proxies, mocking) and only
replaces the wire handling for `http://` URLs: one `recv()` system call per
network read, chunked decoding with `bytes.find`, and one body piece handed
up per read. `https://` requests go to httpx's own transport unchanged.

One system call per read: a Python socket with a timeout is non-blocking
underneath and does poll() + recv() for every read. Sockets here stay
blocking and carry their read/write timeouts in the kernel (SO_RCVTIMEO /
SO_SNDTIMEO), which makes recv() fail with EAGAIN when the timeout passes;
that becomes httpx.ReadTimeout / WriteTimeout as usual.

Readers that time the body one network read at a time take
`arrival_reader(response)`: for a chunked body from this transport it is
one loop around recv(), with none of httpx's per-piece layers in between.
"""

from __future__ import annotations

import select
import socket
import struct
import time
from typing import Callable, Iterator

import httpx

_CRLF = b"\r\n"
_READ = 65536
perf_counter = time.perf_counter


def _timeval(seconds: float | None) -> bytes:
    if seconds is None:
        return struct.pack("@ll", 0, 0)  # 0 means no timeout to the kernel
    whole = int(seconds)
    micros = int((seconds - whole) * 1e6)
    if whole <= 0 and micros <= 0:
        micros = 1  # "don't wait" must not become "wait forever"
    return struct.pack("@ll", whole, micros)


# The kernel read timeout is at most this long; the request's own read
# timeout is kept in user space on top of it. A quiet stream thus wakes the
# reader now and then, which lets the timed loop hand what it has to the
# parser (see _read_chunked_arrivals) without looking at every read itself.
QUIET_TICK_S = 0.25


class _Conn:
    __slots__ = ("sock", "buf", "key", "complete", "read_timeout", "_timeouts")

    def __init__(self, sock: socket.socket, key: tuple) -> None:
        self.sock = sock
        self.buf = b""
        self.key = key
        self.complete = False  # the current response body was read to its end
        self.read_timeout: float | None = None
        self._timeouts: tuple = (None, None)

    def set_timeouts(self, read: float | None, write: float | None) -> None:
        self.read_timeout = read
        if (read, write) != self._timeouts:
            tick = QUIET_TICK_S if read is None else min(read, QUIET_TICK_S)
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, _timeval(tick))
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, _timeval(write))
            self._timeouts = (read, write)

    def check_quiet(self, quiet_since: float | None, now: float) -> float:
        """A kernel tick passed without data: ReadTimeout once the read timeout is used up; else when the quiet began."""
        if quiet_since is None:
            quiet_since = now - min(QUIET_TICK_S, self.read_timeout or QUIET_TICK_S)
        if self.read_timeout is not None and now - quiet_since >= self.read_timeout:
            raise httpx.ReadTimeout(f"timed out reading from {self.key[0]}:{self.key[1]}")
        return quiet_since

    def recv(self) -> bytes:
        quiet_since = None
        while True:
            try:
                data = self.sock.recv(_READ)
                break
            except (BlockingIOError, socket.timeout):  # SO_RCVTIMEO tick
                quiet_since = self.check_quiet(quiet_since, perf_counter())
            except OSError as exc:
                raise httpx.ReadError(str(exc)) from exc
        if not data:
            raise httpx.RemoteProtocolError("peer closed connection without sending complete message body")
        return data

    def idle_and_alive(self) -> bool:
        # An idle keep-alive socket that is readable has been closed (or sent junk) by the server.
        try:
            readable, _, _ = select.select([self.sock], [], [], 0)
        except (OSError, ValueError):
            return False
        return not readable

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass


class _ChunkedDecoder:
    """Transfer-Encoding: chunked, pushed one network read at a time."""

    __slots__ = ("buf", "remaining", "done")

    def __init__(self) -> None:
        self.buf = b""  # undecoded bytes; after the end, whatever followed the body
        self.remaining = -1  # bytes left in the chunk; -1: size line next, -2: CRLF after data, -3: trailers
        self.done = False

    def feed(self, data: bytes) -> bytes:
        """The body bytes `data` completes, b"" if none; sets `done` at the end of the body."""
        buf = self.buf + data if self.buf else data
        remaining = self.remaining
        out = []
        while True:
            if remaining > 0:
                if not buf:
                    break
                piece = buf[:remaining]
                buf = buf[remaining:]
                remaining -= len(piece)
                out.append(piece)
                if remaining:
                    break
                remaining = -2
            if remaining == -2:
                if len(buf) < 2:
                    break
                if buf[:2] != _CRLF:
                    raise httpx.RemoteProtocolError("malformed chunked body: missing CRLF after chunk")
                buf = buf[2:]
                remaining = -1
            end = buf.find(_CRLF)
            if end < 0:
                break
            line, buf = buf[:end], buf[end + 2:]
            if remaining == -3:  # trailer lines until the empty line
                if not line:
                    self.done = True
                    break
                continue
            try:
                remaining = int(line.split(b";", 1)[0], 16)
            except ValueError:
                raise httpx.RemoteProtocolError(f"malformed chunk size line: {line[:40]!r}") from None
            if remaining == 0:
                remaining = -3
        self.buf = buf
        self.remaining = remaining
        return (b"".join(out) if len(out) > 1 else out[0]) if out else b""


    def decode_reads(self, wire_times: list[float], wire: list[bytes], times: list[float],
                     reads: list[bytes]) -> None:
        """Decode network reads in a batch: each read's body bytes, with its time, go to `times`/`reads`.

        Consumes `wire_times`/`wire`. A read that is exactly one whole chunk
        (one server write, the usual case) takes a find, an int() and a slice.
        """
        for now, data in zip(wire_times, wire):
            if self.done:  # bytes after the body belong to the next response
                self.buf += data
                continue
            piece = None
            if self.remaining == -1 and not self.buf and data.endswith(_CRLF):
                end = data.find(_CRLF)
                try:
                    size = int(data[:end], 16) if end > 0 else 0
                except ValueError:
                    size = 0
                if size > 0 and len(data) == end + 4 + size:
                    piece = data[end + 2:-2]
            if piece is None:
                piece = self.feed(data)
            if piece:
                times.append(now)
                reads.append(piece)
        wire_times.clear()
        wire.clear()


def _chunked(conn: _Conn, decoder: _ChunkedDecoder | None = None) -> Iterator[bytes]:
    """The chunked body as an iterator, one piece per network read that carried body bytes."""
    decoder = decoder or _ChunkedDecoder()
    data, conn.buf = conn.buf, b""
    while True:
        if data:
            piece = decoder.feed(data)
            if piece:
                yield piece
            if decoder.done:
                conn.buf, conn.complete = decoder.buf, True
                return
        data = conn.recv()


class _Body(httpx.SyncByteStream):
    def __init__(self, transport: FastHTTPTransport, conn: _Conn, pieces: Iterator[bytes],
                 decoder: _ChunkedDecoder | None = None) -> None:
        self._transport = transport
        self._conn = conn
        self._pieces = pieces
        self._decoder = decoder  # set for a chunked body: read_arrivals then reads it without a generator
        self._reusable = False

    def __iter__(self) -> Iterator[bytes]:
        return self._pieces  # the decoder itself: no generator layer per piece

    def read_arrivals(self, times: list[float], reads: list[bytes], deadline: float) -> str:
        if self._decoder is None:
            return _read_arrivals(self._pieces, times, reads, deadline)
        return _read_chunked_arrivals(self._conn, self._decoder, times, reads, deadline)

    def close(self) -> None:
        if self._conn.complete and self._reusable:
            self._transport._release(self._conn)
        else:
            self._conn.close()


def _read_chunked_arrivals(conn: _Conn, decoder: _ChunkedDecoder, times: list[float], reads: list[bytes],
                           deadline: float) -> str:
    # The loop that waits on the network. Per read it does one recv() system
    # call, one clock reading, two appends and two cheap checks, nothing
    # more: on this kind of machine each further piece of code touched
    # between two waits costs microseconds (docs/measurement.md). The
    # chunked framing is decoded afterwards, in a batch: when a read may end
    # the body, when the stream goes quiet for a kernel tick, at the
    # deadline, or when the read fails (what arrived is still handed up).
    recv = conn.sock.recv
    wire_times: list[float] = []
    wire: list[bytes] = []
    add_time = wire_times.append
    add = wire.append
    if conn.buf:  # what came with the response head
        add_time(perf_counter())
        add(conn.buf)
        conn.buf = b""
    quiet_since = None
    handed = len(reads)
    try:
        while True:
            try:
                data = recv(_READ)
            except (BlockingIOError, socket.timeout):  # SO_RCVTIMEO tick: the stream is quiet
                now = perf_counter()
                quiet_since = conn.check_quiet(quiet_since, now)
                if now > deadline:
                    return "deadline"
                decoder.decode_reads(wire_times, wire, times, reads)
                if decoder.done:
                    conn.buf, conn.complete = decoder.buf, True
                    return "end"
                if len(reads) > handed:
                    return "pause"
                continue
            except OSError as exc:
                raise httpx.ReadError(str(exc)) from exc
            now = perf_counter()
            if not data:
                raise httpx.RemoteProtocolError("peer closed connection without sending complete message body")
            quiet_since = None
            add_time(now)
            add(data)
            if data.endswith(b"\r\n\r\n"):  # the body's last chunk ends so (and some others do)
                decoder.decode_reads(wire_times, wire, times, reads)
                if decoder.done:
                    conn.buf, conn.complete = decoder.buf, True
                    return "end"
            if now > deadline:
                return "deadline"
    finally:
        decoder.decode_reads(wire_times, wire, times, reads)


def _read_arrivals(pieces: Iterator[bytes], times: list[float], reads: list[bytes], deadline: float) -> str:
    # Any other body (mocked, https, compressed): pause after every read, so
    # the caller parses as it goes.
    for raw in pieces:
        now = perf_counter()
        times.append(now)
        reads.append(raw)
        return "deadline" if now > deadline else "pause"
    return "end"


_BODY = "benchpack.body"
ArrivalReader = Callable[[list, list, float], str]


def arrival_reader(response: httpx.Response) -> ArrivalReader:
    """A function that reads the body, keeping every network read and the clock reading taken as it returned.

    `reader(times, reads, deadline)` appends body pieces and their arrival
    times until the body ends ("end"), the clock passes `deadline`
    ("deadline"), or it is a good moment to parse what arrived ("pause"):
    the caller parses, and calls again to go on. Parsing thus happens
    outside the loop that waits on the network, where it costs a fraction
    of what it costs between two waits (docs/measurement.md); each piece's
    time is the arrival of the network read that carried it, exactly as if
    it had been parsed on the spot.

    Served by this transport with an identity chunked body, the reader is
    one tight loop over recv() that pauses when the stream goes quiet for
    QUIET_TICK_S; otherwise (mocked, https, compressed) it walks httpx's own
    iterator and pauses after every read.
    """
    body = response.extensions.get(_BODY)
    if body is not None and response.headers.get("content-encoding", "identity") == "identity":
        return body.read_arrivals
    pieces = iter(response.iter_bytes())  # decoded if compressed; an identity body passes through piece by piece
    return lambda times, reads, deadline: _read_arrivals(pieces, times, reads, deadline)


def _sized(conn: _Conn, length: int) -> Iterator[bytes]:
    buf = conn.buf
    conn.buf = b""
    while length:
        if not buf:
            buf = conn.recv()
        piece = buf[:length]
        buf = buf[length:]
        length -= len(piece)
        yield piece
    conn.buf = buf
    conn.complete = True


def _until_close(conn: _Conn) -> Iterator[bytes]:
    if conn.buf:
        yield conn.buf
        conn.buf = b""
    while True:
        try:
            yield conn.recv()
        except httpx.RemoteProtocolError:  # the peer closed: that is this body's end
            conn.complete = True
            return


class FastHTTPTransport(httpx.BaseTransport):
    def __init__(self) -> None:
        self._idle: dict[tuple, list[_Conn]] = {}
        self._tls = httpx.HTTPTransport()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.scheme != "http":
            return self._tls.handle_request(request)
        timeouts = request.extensions.get("timeout", {})
        key = (request.url.host, request.url.port or 80)
        conn = self._acquire(key, timeouts)
        conn.complete = False
        try:
            conn.set_timeouts(timeouts.get("read"), timeouts.get("write"))
            conn.sock.sendall(self._serialize(request))
            status, reason, headers, http10 = self._read_head(conn)
        except (BlockingIOError, socket.timeout) as exc:  # SO_SNDTIMEO expired
            conn.close()
            raise httpx.WriteTimeout(str(exc) or "timed out sending request") from exc
        except OSError as exc:
            conn.close()
            raise httpx.ReadError(str(exc)) from exc
        except httpx.HTTPError:
            conn.close()
            raise
        lower = {k.lower(): v for k, v in headers}
        decoder = None
        keep_alive = not http10 and b"close" not in lower.get(b"connection", b"").lower()
        if request.method == "HEAD" or status in (204, 304) or 100 <= status < 200:
            pieces: Iterator[bytes] = iter(())
            conn.complete = True
        elif b"chunked" in lower.get(b"transfer-encoding", b"").lower():
            decoder = _ChunkedDecoder()
            pieces = _chunked(conn, decoder)
        elif b"content-length" in lower:
            pieces = _sized(conn, int(lower[b"content-length"]))
        else:
            pieces, keep_alive = _until_close(conn), False
        body = _Body(self, conn, pieces, decoder)
        body._reusable = keep_alive
        return httpx.Response(status, headers=headers, stream=body,
                              extensions={"http_version": b"HTTP/1.1", "reason_phrase": reason, _BODY: body})

    def _acquire(self, key: tuple, timeouts: dict) -> _Conn:
        idle = self._idle.get(key) or []
        while idle:
            conn = idle.pop()
            if conn.idle_and_alive():
                return conn
            conn.close()
        try:
            sock = socket.create_connection(key, timeout=timeouts.get("connect"))
        except socket.timeout as exc:
            raise httpx.ConnectTimeout(f"timed out connecting to {key[0]}:{key[1]}") from exc
        except OSError as exc:
            raise httpx.ConnectError(str(exc)) from exc
        sock.settimeout(None)  # blocking from here on; _Conn.set_timeouts puts the timeouts in the kernel
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return _Conn(sock, key)

    def _release(self, conn: _Conn) -> None:
        self._idle.setdefault(conn.key, []).append(conn)

    @staticmethod
    def _serialize(request: httpx.Request) -> bytes:
        body = request.read()
        lines = [b"%s %s HTTP/1.1" % (request.method.encode(), request.url.raw_path)]
        lines += [b"%s: %s" % (k, v) for k, v in request.headers.raw]
        if body and b"content-length" not in {k.lower() for k, _ in request.headers.raw}:
            lines.append(b"Content-Length: %d" % len(body))
        return _CRLF.join(lines) + _CRLF + _CRLF + body

    @staticmethod
    def _read_head(conn: _Conn) -> tuple[int, bytes, list[tuple[bytes, bytes]], bool]:
        while True:  # skip interim 1xx responses
            end = conn.buf.find(b"\r\n\r\n")
            while end < 0:
                if len(conn.buf) > 65536:
                    raise httpx.RemoteProtocolError("response head larger than 64 KiB")
                conn.buf += conn.recv()
                end = conn.buf.find(b"\r\n\r\n")
            head, conn.buf = conn.buf[:end], conn.buf[end + 4:]
            status_line, *header_lines = head.split(_CRLF)
            parts = status_line.split(b" ", 2)
            if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit():
                raise httpx.RemoteProtocolError(f"malformed status line: {status_line[:60]!r}")
            status = int(parts[1])
            if 100 <= status < 200 and status != 101:
                continue
            headers = []
            for line in header_lines:
                name, sep, value = line.partition(b":")
                if not sep:
                    raise httpx.RemoteProtocolError(f"malformed header line: {line[:60]!r}")
                headers.append((name.strip(), value.strip()))
            return status, parts[2] if len(parts) > 2 else b"", headers, parts[0] == b"HTTP/1.0"

    def close(self) -> None:
        for conns in self._idle.values():
            for conn in conns:
                conn.close()
        self._idle.clear()
        self._tls.close()
