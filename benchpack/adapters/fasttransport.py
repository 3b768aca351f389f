"""A lean HTTP/1.1 transport for httpx, for plain-http streaming.

Why it exists: measured side by side (docs/measurement.md), httpx's default
transport (httpcore + h11, pure-Python framing) costs several times more CPU
per streamed chunk than the socket read itself, and that cost shows up as
TTFT/TPOT error on fast local servers. This transport keeps httpx as the
client API (URLs, headers, timeouts, error types, proxies, mocking) and only
replaces the wire handling for `http://` URLs: one `recv()` per network read,
chunked decoding with `bytes.find`, and one body piece handed up per read.
`https://` requests go to httpx's own transport unchanged.
"""

from __future__ import annotations

import select
import socket
from typing import Iterator

import httpx

_CRLF = b"\r\n"
_READ = 65536


class _Conn:
    __slots__ = ("sock", "buf", "key")

    def __init__(self, sock: socket.socket, key: tuple) -> None:
        self.sock = sock
        self.buf = b""
        self.key = key

    def recv(self) -> bytes:
        try:
            data = self.sock.recv(_READ)
        except socket.timeout as exc:
            raise httpx.ReadTimeout(f"timed out reading from {self.key[0]}:{self.key[1]}") from exc
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


class _Body(httpx.SyncByteStream):
    def __init__(self, transport: FastHTTPTransport, conn: _Conn, pieces: Iterator[bytes]) -> None:
        self._transport = transport
        self._conn = conn
        self._pieces = pieces
        self._complete = False
        self._reusable = False

    def __iter__(self) -> Iterator[bytes]:
        for piece in self._pieces:
            yield piece
        self._complete = True

    def close(self) -> None:
        if self._complete and self._reusable:
            self._transport._release(self._conn)
        else:
            self._conn.close()


def _chunked(conn: _Conn) -> Iterator[bytes]:
    """Decode Transfer-Encoding: chunked, one yielded piece per network read."""
    buf = conn.buf
    conn.buf = b""
    remaining = -1  # bytes left in the current chunk; -1: expecting a size line
    while True:
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
                remaining = -2  # the CRLF after the chunk data
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
            try:
                size = int(buf[:end].split(b";", 1)[0], 16)
            except ValueError:
                raise httpx.RemoteProtocolError(f"malformed chunk size line: {buf[:end][:40]!r}") from None
            buf = buf[end + 2:]
            if size == 0:
                if out:
                    yield b"".join(out)
                # Trailer lines until the empty line.
                while True:
                    end = buf.find(_CRLF)
                    while end < 0:
                        buf += conn.recv()
                        end = buf.find(_CRLF)
                    line, buf = buf[:end], buf[end + 2:]
                    if not line:
                        conn.buf = buf
                        return
            remaining = size
        if out:
            yield b"".join(out) if len(out) > 1 else out[0]
        buf += conn.recv()


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


def _until_close(conn: _Conn) -> Iterator[bytes]:
    if conn.buf:
        yield conn.buf
        conn.buf = b""
    while True:
        try:
            data = conn.sock.recv(_READ)
        except socket.timeout as exc:
            raise httpx.ReadTimeout("timed out reading response body") from exc
        if not data:
            return
        yield data


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
        try:
            conn.sock.settimeout(timeouts.get("write"))
            conn.sock.sendall(self._serialize(request))
            conn.sock.settimeout(timeouts.get("read"))
            status, reason, headers, http10 = self._read_head(conn)
        except socket.timeout as exc:
            conn.close()
            raise httpx.WriteTimeout(str(exc) or "timed out sending request") from exc
        except OSError as exc:
            conn.close()
            raise httpx.ReadError(str(exc)) from exc
        except httpx.HTTPError:
            conn.close()
            raise
        lower = {k.lower(): v for k, v in headers}
        keep_alive = not http10 and b"close" not in lower.get(b"connection", b"").lower()
        if request.method == "HEAD" or status in (204, 304) or 100 <= status < 200:
            pieces: Iterator[bytes] = iter(())
        elif b"chunked" in lower.get(b"transfer-encoding", b"").lower():
            pieces = _chunked(conn)
        elif b"content-length" in lower:
            pieces = _sized(conn, int(lower[b"content-length"]))
        else:
            pieces, keep_alive = _until_close(conn), False
        body = _Body(self, conn, pieces)
        body._reusable = keep_alive
        return httpx.Response(status, headers=headers, stream=body,
                              extensions={"http_version": b"HTTP/1.1", "reason_phrase": reason})

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
