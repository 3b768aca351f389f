"""Plain-http HTTP/1.1 on the wire, with no httpx: connections, a keep-alive pool, bodies, a small client.

Why: measured side by side (docs/measurement.md), httpx's default transport
(httpcore + h11, pure-Python framing) costs several times more CPU per
streamed chunk than the socket read itself, and that cost shows up as
TTFT/TPOT error on fast local servers; and merely importing httpx (with
ssl, email, cookies, idna) costs about as much CPU as a 16-stream run's
whole request work. So the wire handling lives here, importing nothing
but the standard library: `PlainClient` carries an `http://` run's
requests and probes on its own, and `fasttransport.FastHTTPTransport`
wraps the same code as an httpx transport for everything that goes
through httpx (an injected client, a runner host's pinned transport,
https://).

One system call per read: a Python socket with a timeout is non-blocking
underneath and does poll() + recv() for every read. Sockets here stay
blocking and carry their timeouts in the kernel (SO_RCVTIMEO /
SO_SNDTIMEO), which makes recv() fail with EAGAIN when one passes. The
kernel read timeout is a short tick (QUIET_TICK_S); the request's read
timeout is counted on top of it in user space and becomes ReadTimeout.

Readers that time the body one network read at a time take
`arrival_reader(response)`: for a chunked body read here it is one tight
loop around recv() that leaves the chunked framing to batches
(chunked.read_chunked_arrivals), with no per-piece layers in between.

Errors are this module's own (wireerrors), named as httpx names its.
"""

from __future__ import annotations

import json as _json
import re
import select
import socket
import struct
import threading
import time
import zlib
from contextlib import contextmanager
from typing import Any, Callable, Iterator
from urllib.parse import urlsplit

from benchpack import __version__
from benchpack.adapters import rxstamp, streamreader
from benchpack.adapters.chunked import ChunkedDecoder, chunked_pieces, read_chunked_arrivals
from benchpack.adapters.wireerrors import (  # noqa: F401  (re-exported: wire.ReadTimeout, ...)
    ConnectError,
    ConnectTimeout,
    ReadError,
    ReadTimeout,
    RemoteProtocolError,
    TimeoutException,
    TransportError,
    WriteTimeout,
)

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


class StaleConnection(Exception):
    """The connection closed before the response's first byte."""


class Conn:
    __slots__ = ("sock", "buf", "key", "complete", "read_timeout", "_timeouts", "stamped", "offset_ns", "arrived",
                 "tx_stamped", "sent", "earliest")

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
        # For the current body's first reads: read stamp -> the earliest its bytes can have arrived
        # (chunked.read_chunked_arrivals, rundelay).
        self.earliest: dict[float, float] = {}

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
            raise ReadTimeout(f"timed out reading from {self.key[0]}:{self.key[1]}")
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
                raise ReadError(str(exc)) from exc
        if not data:
            raise RemoteProtocolError("peer closed connection without sending complete message body")
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


class Body:
    """A response body on its connection: iterate it, or time it with `read_arrivals`; `close()` hands the
    connection back to its pool when the body was read to its end and the server keeps it alive."""

    __slots__ = ("conn", "pieces", "decoder", "reusable", "release")

    def __init__(self, conn: Conn, pieces: Iterator[bytes], decoder: ChunkedDecoder | None,
                 reusable: bool, release: Callable[[Conn], None]) -> None:
        self.conn = conn
        self.pieces = pieces
        self.decoder = decoder  # set for a chunked body: read_arrivals then reads it without a generator
        self.reusable = reusable
        self.release = release

    def __iter__(self) -> Iterator[bytes]:
        return self.pieces  # the decoder itself: no generator layer per piece

    def read_arrivals(self, times: list[float], reads: list[bytes], deadline: float) -> str:
        if self.decoder is None:
            return _read_arrivals(self.pieces, times, reads, deadline)
        shared = streamreader.active()
        if shared is not None:  # a lane's level: one thread reads every stream (adapters/streamreader.py)
            return shared.read_arrivals(self.conn, self.decoder, times, reads, deadline)
        return read_chunked_arrivals(self.conn, self.decoder, times, reads, deadline)

    def close(self) -> None:
        if self.conn.complete and self.reusable:
            self.release(self.conn)
        else:
            self.conn.close()


def _read_arrivals(pieces: Iterator[bytes], times: list[float], reads: list[bytes], deadline: float) -> str:
    # Any other body (mocked, https, compressed): pause after every read, so
    # the caller parses as it goes.
    for raw in pieces:
        now = perf_counter()
        times.append(now)
        reads.append(raw)
        return "deadline" if now > deadline else "pause"
    return "end"


BODY = "benchpack.body"  # the response's `extensions` key of its body, on both paths
ArrivalReader = Callable[[list, list, float], str]


def arrival_reader(response: Any) -> ArrivalReader:
    """A function that reads the body, keeping every network read and the clock reading taken as it returned.

    `reader(times, reads, deadline)` appends body pieces and their arrival
    times until the body ends ("end"), the clock passes `deadline`
    ("deadline"), or it is a good moment to parse what arrived ("pause"):
    the caller parses, and calls again to go on. Parsing thus happens
    outside the loop that waits on the network, where it costs a fraction
    of what it costs between two waits (docs/measurement.md); each piece's
    time is the arrival of the network read that carried it, exactly as if
    it had been parsed on the spot.

    For a response read here (PlainResponse, or httpx's over FastHTTPTransport)
    with an identity chunked body, the reader is one tight loop over recv()
    that pauses when the stream goes quiet for QUIET_TICK_S, and a read's
    time is the kernel's receive stamp where the system gives one (rxstamp);
    otherwise (mocked, https, compressed) it walks the response's decoded
    iterator and pauses after every read.
    """
    body = response.extensions.get(BODY)
    if body is not None and response.headers.get("content-encoding", "identity") == "identity":
        return body.read_arrivals
    pieces = iter(response.iter_bytes())  # decoded if compressed; an identity body passes through piece by piece
    return lambda times, reads, deadline: _read_arrivals(pieces, times, reads, deadline)


def last_arrival(response: Any) -> float | None:
    """When the newest bytes read for `response` reached this machine, by the kernel's stamp (rxstamp);
    None when its connection is not stamped. Right after the head is read, that is the head's arrival;
    after the body's end, the end's."""
    body = response.extensions.get(BODY)
    return body.conn.arrived if body is not None and body.conn.stamped else None


def earliest_arrivals(response: Any) -> dict[float, float]:
    """For the body's first stamped reads: read time -> the earliest moment its bytes can have arrived
    (rundelay); empty where the reads were not watched."""
    body = response.extensions.get(BODY)
    return dict(body.conn.earliest) if body is not None and body.conn.stamped else {}


def request_sent(response: Any) -> float | None:
    """When the last byte of the request behind `response` was handed to the kernel (its transmit stamp where
    the kernel gives one, rxstamp.sent_at); None for a response this module did not carry."""
    body = response.extensions.get(BODY)
    return body.conn.sent if body is not None else None


def sized(conn: Conn, length: int) -> Iterator[bytes]:
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


def until_close(conn: Conn) -> Iterator[bytes]:
    if conn.buf:
        yield conn.buf
        conn.buf = b""
    while True:
        try:
            yield conn.recv()
        except RemoteProtocolError:  # the peer closed: that is this body's end
            conn.complete = True
            return


Head = tuple  # (status, reason, [(name, value)], http10)


class Pool:
    """Idle keep-alive connections per (host, port), and how new ones are made."""

    def __init__(self, kernel_stamps: bool = True) -> None:
        self.kernel_stamps = kernel_stamps  # False: time reads in user space even where rxstamp works
        self.idle: dict[tuple, list[Conn]] = {}
        # The concurrency lane sends from several threads through one adapter:
        # taking and returning an idle connection must be atomic.
        self.lock = threading.Lock()

    def acquire(self, key: tuple, connect_timeout: float | None, fresh: bool = False) -> tuple[Conn, bool]:
        """A connection to `key` and whether it was reused: an idle one that is still open, else a new one."""
        while not fresh:
            with self.lock:
                idle = self.idle.get(key)
                conn = idle.pop() if idle else None
            if conn is None:
                break
            if conn.idle_and_alive():
                return conn, True
            conn.close()
        try:
            sock = socket.create_connection((lookup_host(key[0]), *key[1:]), timeout=connect_timeout)
        except socket.timeout as exc:
            raise ConnectTimeout(f"timed out connecting to {key[0]}:{key[1]}") from exc
        except OSError as exc:
            raise ConnectError(str(exc)) from exc
        sock.settimeout(None)  # blocking from here on; Conn.set_timeouts puts the timeouts in the kernel
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return Conn(sock, key, stamped=self.kernel_stamps and rxstamp.enable(sock),
                    tx_stamped=self.kernel_stamps and rxstamp.enable_tx(sock)), False

    def release(self, conn: Conn) -> None:
        with self.lock:
            self.idle.setdefault(conn.key, []).append(conn)

    def close(self) -> None:
        with self.lock:
            conns = [conn for idle in self.idle.values() for conn in idle]
            self.idle.clear()
        for conn in conns:
            conn.close()


def exchange(conn: Conn, wire: bytes, timeouts: dict) -> Head:
    """Send the request and read the response head; StaleConnection when the
    connection died before a single response byte arrived."""
    conn.complete = False
    conn.arrived = conn.sent = None
    conn.earliest = {}
    if conn.stamped or conn.tx_stamped:
        conn.offset_ns = rxstamp.realtime_offset_ns()
    try:
        conn.set_timeouts(timeouts.get("read"), timeouts.get("write"))
        before = perf_counter()
        conn.sock.sendall(wire)
        now = perf_counter()
        conn.sent = rxstamp.sent_at(conn.sock, conn.offset_ns, before, now) if conn.tx_stamped else now
        return read_head(conn)
    except (BlockingIOError, socket.timeout) as exc:  # SO_SNDTIMEO expired
        conn.close()
        raise WriteTimeout(str(exc) or "timed out sending request") from exc
    except (BrokenPipeError, ConnectionResetError) as exc:
        conn.close()
        if not conn.buf:
            raise StaleConnection() from exc
        raise ReadError(str(exc)) from exc
    except OSError as exc:
        conn.close()
        raise ReadError(str(exc)) from exc
    except (RemoteProtocolError, ReadError) as exc:
        conn.close()
        closed = "peer closed" in str(exc) or isinstance(exc.__cause__, ConnectionResetError)
        if not conn.buf and closed:
            raise StaleConnection() from exc
        raise
    except TransportError:
        conn.close()
        raise


def open_response(acquire: Callable[[bool], tuple[Conn, bool]], make_wire: Callable[[], bytes],
                  timeouts: dict) -> tuple[Conn, Head]:
    """Send a request on a pooled (else a new) connection and read the response head.

    `acquire(fresh)` gives (connection, reused); `make_wire()` the request's bytes.
    """
    conn, reused = acquire(False)
    try:
        return conn, exchange(conn, make_wire(), timeouts)
    except StaleConnection:
        # A pooled connection the server had already closed (llama-server
        # closes a few ms after each streamed response without saying so):
        # not one response byte came back, so the server never answered
        # this request. Send it once more on a fresh connection — the
        # usual keep-alive rule; D-014's "no silent retry" is about
        # changing the request, which this never does.
        if not reused:
            raise RemoteProtocolError("server closed the connection without a response") from None
    conn, _ = acquire(True)
    try:
        return conn, exchange(conn, make_wire(), timeouts)
    except StaleConnection:
        raise RemoteProtocolError("server closed the connection without a response") from None


def response_body(conn: Conn, head: Head, method: str, release: Callable[[Conn], None]) -> Body:
    """The body the head announces: none, chunked, sized or until the connection closes."""
    status, _, headers, http10 = head
    lower = {k.lower(): v for k, v in headers}
    decoder = None
    keep_alive = not http10 and b"close" not in lower.get(b"connection", b"").lower()
    if method == "HEAD" or status in (204, 304) or 100 <= status < 200:
        pieces: Iterator[bytes] = iter(())
        conn.complete = True
    elif b"chunked" in lower.get(b"transfer-encoding", b"").lower():
        decoder = ChunkedDecoder()
        pieces = chunked_pieces(conn, decoder)
    elif b"content-length" in lower:
        pieces = sized(conn, int(lower[b"content-length"]))
    else:
        pieces, keep_alive = until_close(conn), False
    return Body(conn, pieces, decoder, keep_alive, release)


def read_head(conn: Conn) -> Head:
    while True:  # skip interim 1xx responses
        end = conn.buf.find(b"\r\n\r\n")
        while end < 0:
            if len(conn.buf) > 65536:
                raise RemoteProtocolError("response head larger than 64 KiB")
            conn.buf += conn.recv()
            end = conn.buf.find(b"\r\n\r\n")
        head, conn.buf = conn.buf[:end], conn.buf[end + 4:]
        status_line, *header_lines = head.split(_CRLF)
        parts = status_line.split(b" ", 2)
        if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit():
            raise RemoteProtocolError(f"malformed status line: {status_line[:60]!r}")
        status = int(parts[1])
        if 100 <= status < 200 and status != 101:
            continue
        headers = []
        for line in header_lines:
            name, sep, value = line.partition(b":")
            if not sep:
                raise RemoteProtocolError(f"malformed header line: {line[:60]!r}")
            headers.append((name.strip(), value.strip()))
        return status, parts[2] if len(parts) > 2 else b"", headers, parts[0] == b"HTTP/1.0"


def serialize(method: str, target: bytes, headers: list[tuple[bytes, bytes]], body: bytes) -> bytes:
    lines = [b"%s %s HTTP/1.1" % (method.encode(), target)]
    lines += [b"%s: %s" % (k, v) for k, v in headers]
    if body and b"content-length" not in {k.lower() for k, _ in headers}:
        lines.append(b"Content-Length: %d" % len(body))
    return _CRLF.join(lines) + _CRLF + _CRLF + body


# --- the plain client -----------------------------------------------------------

# What the plain client sends as is. Anything else (https, credentials in the URL, a name or path that
# would need IDNA or percent-encoding, a fragment) goes through httpx, which knows how to write it.
_PLAIN_URL = re.compile(r"http://[A-Za-z0-9._~!$&'()*+,;=:\[\]%-]+(?:[/?][A-Za-z0-9._~!$&'()*+,;=:@/?%-]*)?\Z")


_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")  # httpx would write it as %25


def plain_url(url: str) -> bool:
    """Whether PlainClient sends to `url` exactly as httpx would (so it may stand in for httpx)."""
    if not _PLAIN_URL.match(url) or _BAD_ESCAPE.search(url):
        return False
    try:
        parts = urlsplit(url)
        return bool(parts.hostname) and (parts.port is None or parts.port > 0)
    except ValueError:  # a port that is not a number, a malformed [IPv6] literal
        return False


def lookup_host(host: str | None) -> str | bytes | None:
    """`host` as `socket.getaddrinfo` gets it: for a plain ASCII name, the bytes the idna codec would make.

    getaddrinfo encodes a str host with the idna codec, and importing that codec (encodings.idna with
    stringprep and unicodedata) was ~0.8 ms of every run's CPU, for an address or an ASCII name nearly
    always. For ASCII the codec only checks the labels' lengths (encodings/idna.py, "ASCII name: fast
    path"); the same checks are made here, and a name that fails them, or is not ASCII, is passed as
    given, so the codec encodes or refuses it with its own words, as before.
    """
    if isinstance(host, str) and host and host.isascii():
        encoded = host.encode("ascii")
        labels = encoded.split(b".")
        if all(0 < len(label) < 64 for label in labels[:-1]) and len(labels[-1]) < 64:
            return encoded
    return host


class _Target:
    __slots__ = ("key", "target", "host")

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        host = parts.hostname
        port = parts.port
        self.key = (host, port or 80)
        shown = f"[{host}]" if ":" in host else host
        self.host = (shown if port in (None, 80) else f"{shown}:{port}").encode()
        self.target = ((parts.path or "/") + (f"?{parts.query}" if parts.query else "")).encode()


class Headers:
    """Response headers: `get` by any case of the name; a repeated header reads as its values joined by ", "."""

    __slots__ = ("raw", "_values")

    def __init__(self, raw: list[tuple[bytes, bytes]]) -> None:
        self.raw = raw
        values: dict[str, str] = {}
        for name, value in raw:
            key = name.decode("latin-1").lower()
            try:
                text = value.decode("utf-8")
            except UnicodeDecodeError:
                text = value.decode("latin-1")
            values[key] = f"{values[key]}, {text}" if key in values else text
        self._values = values

    def get(self, name: str, default: Any = None) -> Any:
        return self._values.get(name.lower(), default)

    def __getitem__(self, name: str) -> str:
        return self._values[name.lower()]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self._values


def _decoded(pieces: Iterator[bytes], encoding: str) -> Iterator[bytes]:
    # A server that compresses although asked for identity: gzip and deflate, as httpx decodes them by
    # default; any other coding passes through as httpx passes one it does not know.
    if encoding == "gzip":
        decompressor = zlib.decompressobj(zlib.MAX_WBITS | 16)
    elif encoding == "deflate":
        decompressor = None  # zlib-wrapped or raw: the first bytes tell (as httpx's DeflateDecoder)
    else:
        yield from pieces
        return
    try:
        for piece in pieces:
            if decompressor is None:
                try:
                    decompressor = zlib.decompressobj()
                    out = decompressor.decompress(piece)
                except zlib.error:
                    decompressor = zlib.decompressobj(-zlib.MAX_WBITS)
                    out = decompressor.decompress(piece)
            else:
                out = decompressor.decompress(piece)
            if out:
                yield out
        if decompressor is not None:
            rest = decompressor.flush()
            if rest:
                yield rest
    except zlib.error as exc:
        raise RemoteProtocolError(f"cannot decode the {encoding} body: {exc}") from None


class PlainResponse:
    """A response with its body not read yet: what the adapters and probes use of httpx.Response."""

    __slots__ = ("status_code", "reason_phrase", "headers", "extensions", "_body", "_content", "_closed")

    def __init__(self, head: Head, body: Body) -> None:
        status, reason, headers, _ = head
        self.status_code: int = status
        self.reason_phrase = reason.decode("latin-1")
        self.headers = Headers(headers)
        self.extensions = {BODY: body}
        self._body = body
        self._content: bytes | None = None
        self._closed = False

    def iter_bytes(self) -> Iterator[bytes]:
        encoding = self.headers.get("content-encoding", "identity").strip().lower()
        pieces = iter(self._body) if encoding == "identity" else _decoded(iter(self._body), encoding)
        for piece in pieces:
            if piece:
                yield piece
        self.close()

    def read(self) -> bytes:
        if self._content is None:
            self._content = b"".join(self.iter_bytes())
        return self._content

    @property
    def content(self) -> bytes:
        return self.read()

    def json(self) -> Any:
        return _json.loads(self.read())

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._body.close()


class PlainClient:
    """HTTP/1.1 to `http://` URLs over this module's pooled connections, with no httpx.

    `post_json` is the adapters' timed request: the same head httpx sends
    for it (same header names, order and values; the User-Agent names
    benchpack), the same timeouts. `request` is the probes' short GET/POST,
    body read. Only URLs `plain_url` accepts; no cookies are kept, no
    redirect is followed (the adapters' httpx client follows none either).
    """

    def __init__(self, kernel_stamps: bool = True) -> None:
        self.pool = Pool(kernel_stamps)
        self._targets: dict[str, _Target] = {}
        self.is_closed = False

    def _target(self, url: str) -> _Target:
        target = self._targets.get(url)
        if target is None:
            if not plain_url(url):
                raise ValueError(f"{url!r} is not a plain http:// URL; it needs the httpx client")
            if len(self._targets) > 64:
                self._targets.clear()
            target = self._targets[url] = _Target(url)
        return target

    def send(self, method: str, url: str, headers: list[tuple[bytes, bytes]], body: bytes,
             timeout_s: float) -> PlainResponse:
        """Send one request; the response's body is not read yet (close it, or read it to the end)."""
        target = self._target(url)
        timeouts = {"connect": timeout_s, "read": timeout_s, "write": timeout_s}
        # Header order as httpx writes a request: Host first, Content-Length last.
        head = [(b"Host", target.host), *_FIXED_HEADERS, *headers]
        if body or method in ("POST", "PUT", "PATCH"):
            head.append((b"Content-Length", b"%d" % len(body)))
        wire = serialize(method, target.target, head, body)
        conn, response_head = open_response(lambda fresh: self.pool.acquire(target.key, timeout_s, fresh),
                                            lambda: wire, timeouts)
        return PlainResponse(response_head, response_body(conn, response_head, method, self.pool.release))

    @contextmanager
    def post_json(self, url: str, payload: bytes, timeout_s: float,
                  headers: list[tuple[bytes, bytes]]) -> Iterator[PlainResponse]:
        response = self.send("POST", url, headers, payload, timeout_s)
        try:
            yield response
        finally:
            response.close()

    def request(self, method: str, url: str, json: Any = None, timeout: float = 5.0) -> PlainResponse:
        """A short request, its body read (httpx.Client.request's shape, for the probes)."""
        headers = [(b"Accept", b"*/*"), (b"Accept-Encoding", b"identity")]
        body = b""
        if json is not None:
            body = _json.dumps(json, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()
            headers.append((b"Content-Type", b"application/json"))
        response = self.send(method, url, headers, body, timeout)
        try:
            response.read()
        finally:
            response.close()
        return response

    def close(self) -> None:
        self.is_closed = True
        self.pool.close()


_FIXED_HEADERS = ((b"Connection", b"keep-alive"), (b"User-Agent", f"benchpack/{__version__}".encode()))
