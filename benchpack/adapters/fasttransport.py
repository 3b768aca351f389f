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
blocking and carry their timeouts in the kernel (SO_RCVTIMEO /
SO_SNDTIMEO), which makes recv() fail with EAGAIN when one passes. The
kernel read timeout is a short tick (QUIET_TICK_S); the request's read
timeout is counted on top of it in user space and becomes
httpx.ReadTimeout as usual.

Readers that time the body one network read at a time take
`arrival_reader(response)`: for a chunked body from this transport it is
one tight loop around recv() that leaves the chunked framing to batches,
with none of httpx's per-piece layers in between.
"""

from __future__ import annotations

import select
import socket
import struct
import threading
import time
from typing import Callable, Iterator

import httpx

from benchpack.adapters import rxstamp
from benchpack.adapters.chunked import ChunkedDecoder, chunked_pieces, read_chunked_arrivals

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
# parser (see chunked.read_chunked_arrivals) without looking at every read itself.
QUIET_TICK_S = 0.25


class _StaleConnection(Exception):
    """The connection closed before the response's first byte."""


class _Conn:
    __slots__ = ("sock", "buf", "key", "complete", "read_timeout", "_timeouts", "stamped", "offset_ns", "arrived",
                 "tx_stamped", "sent")

    def __init__(self, sock: socket.socket, key: tuple, stamped: bool = False, tx_stamped: bool = False) -> None:
        self.sock = sock
        self.buf = b""
        self.key = key
        self.complete = False  # the current response body was read to its end
        self.read_timeout: float | None = None
        self._timeouts: tuple = (None, None)
        # Kernel receive timestamps (rxstamp): `arrived` is when the newest bytes in `buf` reached this
        # machine, on the perf_counter scale; `offset_ns` is refreshed for every request.
        self.stamped = stamped
        self.offset_ns = 0
        self.arrived: float | None = None
        # When the current request's last byte left (rxstamp.sent_at): the kernel's transmit stamp where the
        # socket has them (`tx_stamped`), else the reading taken as sendall() returned.
        self.tx_stamped = tx_stamped
        self.sent: float | None = None

    def set_timeouts(self, read: float | None, write: float | None) -> None:
        self.read_timeout = read
        if (read, write) != self._timeouts:
            tick = QUIET_TICK_S if read is None else min(read, QUIET_TICK_S)
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, _timeval(tick))
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, _timeval(write))
            self._timeouts = (read, write)

    def check_quiet(self, quiet_since: float | None, now: float) -> float:
        """A kernel tick passed without data: ReadTimeout once the read timeout is used up, else when quiet began."""
        if quiet_since is None:
            quiet_since = now - min(QUIET_TICK_S, self.read_timeout or QUIET_TICK_S)
        if self.read_timeout is not None and now - quiet_since >= self.read_timeout:
            raise httpx.ReadTimeout(f"timed out reading from {self.key[0]}:{self.key[1]}")
        return quiet_since

    def recv(self) -> bytes:
        quiet_since = None
        while True:
            try:
                if self.stamped:
                    data, ancillary, _, _ = self.sock.recvmsg(_READ, rxstamp.ANCILLARY_BYTES)
                    self.arrived = rxstamp.arrival(ancillary, self.offset_ns, perf_counter())
                else:
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
        if self.tx_stamped:
            rxstamp.drain_tx(self.sock)  # a late transmit stamp would make it look readable
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


class _Body(httpx.SyncByteStream):
    def __init__(self, transport: FastHTTPTransport, conn: _Conn, pieces: Iterator[bytes],
                 decoder: ChunkedDecoder | None = None) -> None:
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
        return read_chunked_arrivals(self._conn, self._decoder, times, reads, deadline)

    def close(self) -> None:
        if self._conn.complete and self._reusable:
            self._transport._release(self._conn)
        else:
            self._conn.close()


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
    QUIET_TICK_S, and a read's time is the kernel's receive stamp where the
    system gives one (rxstamp); otherwise (mocked, https, compressed) it walks httpx's own
    iterator and pauses after every read.
    """
    body = response.extensions.get(_BODY)
    if body is not None and response.headers.get("content-encoding", "identity") == "identity":
        return body.read_arrivals
    pieces = iter(response.iter_bytes())  # decoded if compressed; an identity body passes through piece by piece
    return lambda times, reads, deadline: _read_arrivals(pieces, times, reads, deadline)


def last_arrival(response: httpx.Response) -> float | None:
    """When the newest bytes read for `response` reached this machine, by the kernel's stamp (rxstamp);
    None when its connection is not stamped. Right after the head is read, that is the head's arrival;
    after the body's end, the end's."""
    body = response.extensions.get(_BODY)
    return body._conn.arrived if body is not None and body._conn.stamped else None


def request_sent(response: httpx.Response) -> float | None:
    """When the last byte of the request behind `response` was handed to the kernel (its transmit stamp where
    the kernel gives one, rxstamp.sent_at); None for a response this transport did not carry."""
    body = response.extensions.get(_BODY)
    return body._conn.sent if body is not None else None


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
    def __init__(self, kernel_stamps: bool = True) -> None:
        self._kernel_stamps = kernel_stamps  # False: time reads in user space even where rxstamp works
        self._idle: dict[tuple, list[_Conn]] = {}
        # The concurrency lane sends from several threads through one adapter:
        # taking and returning an idle connection must be atomic.
        self._idle_lock = threading.Lock()
        # httpx's own transport for https://, made on first use: building it builds an SSL context (tens of
        # ms of CPU), which a run against a plain-http server never needs.
        self._tls_transport: httpx.HTTPTransport | None = None

    @property
    def _tls(self) -> httpx.HTTPTransport:
        with self._idle_lock:
            if self._tls_transport is None:
                self._tls_transport = httpx.HTTPTransport()
            return self._tls_transport

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.scheme != "http":
            return self._tls.handle_request(request)
        timeouts = request.extensions.get("timeout", {})
        key = (request.url.host, request.url.port or 80)
        conn, reused = self._acquire(key, timeouts)
        try:
            status, reason, headers, http10 = self._exchange(conn, request, timeouts)
        except _StaleConnection:
            # A pooled connection the server had already closed (llama-server
            # closes a few ms after each streamed response without saying so):
            # not one response byte came back, so the server never answered
            # this request. Send it once more on a fresh connection — the
            # usual keep-alive rule; D-014's "no silent retry" is about
            # changing the request, which this never does.
            if not reused:
                raise httpx.RemoteProtocolError("server closed the connection without a response") from None
            conn, _ = self._acquire(key, timeouts, fresh=True)
            try:
                status, reason, headers, http10 = self._exchange(conn, request, timeouts)
            except _StaleConnection:
                raise httpx.RemoteProtocolError("server closed the connection without a response") from None
        lower = {k.lower(): v for k, v in headers}
        decoder = None
        keep_alive = not http10 and b"close" not in lower.get(b"connection", b"").lower()
        if request.method == "HEAD" or status in (204, 304) or 100 <= status < 200:
            pieces: Iterator[bytes] = iter(())
            conn.complete = True
        elif b"chunked" in lower.get(b"transfer-encoding", b"").lower():
            decoder = ChunkedDecoder()
            pieces = chunked_pieces(conn, decoder)
        elif b"content-length" in lower:
            pieces = _sized(conn, int(lower[b"content-length"]))
        else:
            pieces, keep_alive = _until_close(conn), False
        body = _Body(self, conn, pieces, decoder)
        body._reusable = keep_alive
        return httpx.Response(status, headers=headers, stream=body,
                              extensions={"http_version": b"HTTP/1.1", "reason_phrase": reason, _BODY: body})

    def _exchange(self, conn: _Conn, request: httpx.Request, timeouts: dict):
        """Send the request and read the response head; _StaleConnection when the
        connection died before a single response byte arrived."""
        conn.complete = False
        conn.arrived = conn.sent = None
        if conn.stamped or conn.tx_stamped:
            conn.offset_ns = rxstamp.realtime_offset_ns()
        try:
            conn.set_timeouts(timeouts.get("read"), timeouts.get("write"))
            wire = self._serialize(request)
            before = perf_counter()
            conn.sock.sendall(wire)
            now = perf_counter()
            conn.sent = rxstamp.sent_at(conn.sock, conn.offset_ns, before, now) if conn.tx_stamped else now
            return self._read_head(conn)
        except (BlockingIOError, socket.timeout) as exc:  # SO_SNDTIMEO expired
            conn.close()
            raise httpx.WriteTimeout(str(exc) or "timed out sending request") from exc
        except (BrokenPipeError, ConnectionResetError) as exc:
            conn.close()
            if not conn.buf:
                raise _StaleConnection() from exc
            raise httpx.ReadError(str(exc)) from exc
        except OSError as exc:
            conn.close()
            raise httpx.ReadError(str(exc)) from exc
        except (httpx.RemoteProtocolError, httpx.ReadError) as exc:
            conn.close()
            closed = "peer closed" in str(exc) or isinstance(exc.__cause__, ConnectionResetError)
            if not conn.buf and closed:
                raise _StaleConnection() from exc
            raise
        except httpx.HTTPError:
            conn.close()
            raise

    def _acquire(self, key: tuple, timeouts: dict, fresh: bool = False) -> tuple[_Conn, bool]:
        while not fresh:
            with self._idle_lock:
                idle = self._idle.get(key)
                conn = idle.pop() if idle else None
            if conn is None:
                break
            if conn.idle_and_alive():
                return conn, True
            conn.close()
        try:
            sock = socket.create_connection(key, timeout=timeouts.get("connect"))
        except socket.timeout as exc:
            raise httpx.ConnectTimeout(f"timed out connecting to {key[0]}:{key[1]}") from exc
        except OSError as exc:
            raise httpx.ConnectError(str(exc)) from exc
        sock.settimeout(None)  # blocking from here on; _Conn.set_timeouts puts the timeouts in the kernel
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return _Conn(sock, key, stamped=self._kernel_stamps and rxstamp.enable(sock),
                     tx_stamped=self._kernel_stamps and rxstamp.enable_tx(sock)), False

    def _release(self, conn: _Conn) -> None:
        with self._idle_lock:
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
        if self._tls_transport is not None:
            self._tls_transport.close()
