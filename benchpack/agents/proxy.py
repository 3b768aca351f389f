"""The measuring proxy: an external agent's model calls, forwarded unchanged and timed like an adapter's.

    agent ──HTTP──▶ MeasuringProxy (127.0.0.1:ephemeral) ──same bytes──▶ endpoint host:port

Every request the agent sends (any method, any path: `/v1/chat/completions`,
`/v1/messages`, `/v1/responses`, `/v1/models`, …) is read off the agent's
connection and written to the endpoint byte for byte; every read of the
answer is written back to the agent as it arrives, before the proxy looks
at it. Then the read is de-chunked and parsed (`turns.TurnReader`) with its
arrival time, the kernel's receive stamp (`adapters.rxstamp`) where there
is one; the clock starts when the request's last byte left for the endpoint
(the kernel's transmit stamp). One row per request goes to
`agent-turns.jsonl` (docs/agents.md), appended and flushed as soon as that
request ends: a row once written is never lost, whatever the agent does next.

What an agent can do wrong, and what happens:

* a malformed request (no request line, bad header, bad Content-Length or
  chunked body, a head over 64 KiB, a body over `max_request_bytes`): the
  proxy answers 400 / 413 itself, records an error row and closes that
  connection; nothing reaches the endpoint;
* more than `max_connections` connections at once: the extra one is
  answered 503 and recorded; the others go on;
* more than `max_turns` requests (when set): answered 429 and recorded;
* never stopping: the harness's time limit stops the agent and then the
  proxy (`close()`): requests in flight get an error row ("session ended"),
  rows already written stay;
* the endpoint unreachable or breaking mid-answer: 502 (when nothing was
  sent back yet) or a cut connection, and an error row.
"""

from __future__ import annotations

import json
import select
import socket
import struct
import threading
import time
import zlib
from pathlib import Path
from typing import Callable
from urllib.parse import urlsplit, urlunsplit

from benchpack.adapters import rxstamp
from benchpack.adapters.chunked import ChunkedDecoder
from benchpack.adapters.wireerrors import RemoteProtocolError
from benchpack.agents.turns import TURN_SCHEMA_VERSION, TurnReader, api_of, request_facts, summarize_turns

perf_counter = time.perf_counter
READ = 65536
MAX_HEAD = 64 * 1024
MAX_REQUEST_BYTES = 64 * 1024 * 1024
MAX_CONNECTIONS = 32
READ_TIMEOUT_S = 600.0


class Malformed(Exception):
    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


class SessionEnded(Exception):
    pass


def _headers(lines: list[bytes]) -> dict[str, str]:
    headers: dict[str, str] = {}
    for line in lines:
        name, sep, value = line.partition(b":")
        if not sep or not name or name != name.strip() or b" " in name:
            raise Malformed(400, f"malformed header line {line[:60]!r}")
        key = name.decode("latin-1").lower()
        text = value.strip().decode("latin-1")
        headers[key] = headers[key] + ", " + text if key in headers else text
    return headers


def _split_head(head: bytes) -> tuple[bytes, dict[str, str]]:
    lines = head[:-4].split(b"\r\n")
    return lines[0], _headers(lines[1:])


def _content_length(headers: dict[str, str]) -> int | None:
    raw = headers.get("content-length")
    if raw is None:
        return None
    values = {v.strip() for v in raw.split(",")}
    if len(values) != 1 or not next(iter(values)).isdigit():
        raise Malformed(400, f"bad Content-Length {raw[:40]!r}")
    return int(next(iter(values)))


def _reply(sock: socket.socket, status: int, reason: str) -> None:
    """The proxy's own answer (it never reached the endpoint), then the connection is closed."""
    body = json.dumps({"error": {"message": f"benchpack proxy: {reason}", "type": "benchpack_proxy"}}).encode()
    phrase = {400: "Bad Request", 413: "Content Too Large", 429: "Too Many Requests", 502: "Bad Gateway",
              503: "Service Unavailable"}.get(status, "Error")
    head = (f"HTTP/1.1 {status} {phrase}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
            "Connection: close\r\n\r\n").encode()
    try:
        sock.sendall(head + body)
        sock.shutdown(socket.SHUT_WR)
    except OSError:
        pass


class _Client:
    """The agent's side of one connection: a buffer over its socket."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buf = b""

    def fill(self) -> bool:
        data = self.sock.recv(READ)
        if not data:
            return False
        self.buf += data
        return True

    def read_request(self, max_body: int) -> tuple[bytes, bytes, dict[str, str], bytes] | None:
        """(raw request bytes, request line, headers, decoded body), None at a clean end of the connection."""
        while b"\r\n\r\n" not in self.buf:
            if len(self.buf) > MAX_HEAD:
                raise Malformed(400, f"request head longer than {MAX_HEAD} bytes")
            if not self.fill():
                if self.buf.strip():
                    raise Malformed(400, "connection closed in the middle of a request head")
                return None
        end = self.buf.index(b"\r\n\r\n") + 4
        if end > MAX_HEAD:
            raise Malformed(400, f"request head longer than {MAX_HEAD} bytes")
        head, self.buf = self.buf[:end], self.buf[end:]
        line, headers = _split_head(head)
        parts = line.split(b" ")
        if len(parts) != 3 or not parts[0].isalpha() or not parts[2].startswith(b"HTTP/1."):
            raise Malformed(400, f"malformed request line {line[:80]!r}")
        if "chunked" in headers.get("transfer-encoding", "").lower():
            decoder, raw, body = ChunkedDecoder(), [], []
            pending, self.buf = self.buf, b""
            while True:
                try:
                    body.append(decoder.feed(pending))
                except RemoteProtocolError as exc:
                    raise Malformed(400, f"malformed chunked request body: {exc}") from None
                used = len(pending) - len(decoder.buf) if decoder.done else len(pending)
                raw.append(pending[:used])
                if decoder.done:
                    self.buf = decoder.buf
                    break
                if sum(map(len, body)) > max_body:
                    raise Malformed(413, f"request body over {max_body} bytes")
                data = self.sock.recv(READ)
                if not data:
                    raise Malformed(400, "connection closed in the middle of a chunked request body")
                pending = data
            return head + b"".join(raw), line, headers, b"".join(body)
        length = _content_length(headers) or 0
        if length > max_body:
            raise Malformed(413, f"request body of {length} bytes is over {max_body}")
        while len(self.buf) < length:
            if not self.fill():
                raise Malformed(400, f"connection closed after {len(self.buf)} of {length} body bytes")
        body, self.buf = self.buf[:length], self.buf[length:]
        return head + body, line, headers, body


class _Response:
    """The endpoint's answer, parsed from the same reads the agent is sent: head, framing, body pieces."""

    def __init__(self, method: bytes, reader: TurnReader) -> None:
        self.method = method
        self.reader = reader
        self.head = b""
        self.status: int | None = None
        self.headers: dict[str, str] = {}
        self.decoder: ChunkedDecoder | None = None
        self.remaining: int | None = None  # Content-Length bytes left; None: chunked or until close
        self.inflate = None
        self.done = False
        self.close_after = False
        self.bytes = 0

    def feed(self, data: bytes, now: float) -> None:
        self.bytes += len(data)
        if self.status is None:
            self.head += data
            end = self.head.find(b"\r\n\r\n")
            if end < 0:
                if len(self.head) > MAX_HEAD:
                    raise RemoteProtocolError("response head too long")
                return
            head, rest = self.head[:end + 4], self.head[end + 4:]
            line, headers = _split_head(head)
            parts = line.split(b" ", 2)
            if len(parts) < 2 or not parts[1].isdigit():
                raise RemoteProtocolError(f"malformed status line {line[:60]!r}")
            status = int(parts[1])
            if 100 <= status < 200:  # 100 Continue and friends: the real head follows
                self.head = b""
                self.feed(rest, now) if rest else None
                return
            self.status, self.headers = status, headers
            self.reader.trace.first_byte = now
            self.close_after = "close" in headers.get("connection", "").lower() or parts[0] == b"HTTP/1.0"
            if self.method == b"HEAD" or status in (204, 304):
                self.done = True
                return
            if "chunked" in headers.get("transfer-encoding", "").lower():
                self.decoder = ChunkedDecoder()
            else:
                try:
                    self.remaining = _content_length(headers)
                except Malformed as exc:
                    raise RemoteProtocolError(exc.reason) from None
                if self.remaining is None:
                    self.close_after = True
            encoding = headers.get("content-encoding", "").lower()
            if encoding in ("gzip", "deflate"):
                self.inflate = zlib.decompressobj(31 if encoding == "gzip" else 15)
            self.reader.begin(headers.get("content-type", ""))
            if self.remaining == 0:
                self.done = True
            data = rest
            if not data:
                return
        if self.decoder is not None:
            body = self.decoder.feed(data)
            self.done = self.decoder.done
        elif self.remaining is not None:
            body = data[:self.remaining]
            self.remaining -= len(body)
            self.done = self.remaining == 0
        else:
            body = data
        if self.inflate is not None and body:
            try:
                body = self.inflate.decompress(body)
            except zlib.error:
                body, self.inflate = b"", None
        self.reader.feed(body, now)


class MeasuringProxy:
    """Forwards an agent's HTTP to `endpoint`'s host and port; one turn row per request in `turns_path`.

    `labels` (case, repetition) go into every row. Use as a context manager;
    `url_for(endpoint)` is the endpoint as the agent must call it (same path).
    """

    def __init__(self, endpoint: str, turns_path: Path, labels: dict | None = None, *,
                 max_connections: int = MAX_CONNECTIONS, max_turns: int | None = None,
                 max_request_bytes: int = MAX_REQUEST_BYTES, read_timeout_s: float = READ_TIMEOUT_S,
                 kernel_stamps: bool = True) -> None:  # fmt: skip
        parts = urlsplit(endpoint)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"the measuring proxy forwards plain http:// endpoints only, not {endpoint!r}")
        self.endpoint = endpoint
        self.upstream = (parts.hostname, parts.port or 80)
        self.turns_path = Path(turns_path)
        self.labels = dict(labels or {})
        self.max_connections = max_connections
        self.max_turns = max_turns
        self.max_request_bytes = max_request_bytes
        self.read_timeout_s = read_timeout_s
        self.kernel_stamps = kernel_stamps
        self.turns: list[dict] = []
        self._lock = threading.Lock()
        self._sequence = 0
        self._connection_ids = 0
        self._active = 0
        self._sockets: set[socket.socket] = set()
        self._threads: list[threading.Thread] = []
        self._closing = False
        self._server: socket.socket | None = None
        self._t0 = perf_counter()
        self.address: tuple[str, int] | None = None

    # -- life ----------------------------------------------------------------------

    def __enter__(self) -> MeasuringProxy:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def start(self) -> None:
        self.turns_path.parent.mkdir(parents=True, exist_ok=True)
        self._server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._server.bind(("127.0.0.1", 0))
        self._server.listen(128)
        self.address = self._server.getsockname()[:2]
        self._t0 = perf_counter()
        thread = threading.Thread(target=self._accept, name="benchpack-measuring-proxy", daemon=True)
        thread.start()
        self._threads.append(thread)

    def url_for(self, endpoint: str | None = None) -> str:
        """`endpoint` (default: the proxied one) with the proxy's host and port: the URL the agent calls."""
        parts = urlsplit(endpoint or self.endpoint)
        host, port = self.address
        return urlunsplit(("http", f"{host}:{port}", parts.path, parts.query, parts.fragment))

    def close(self, join_s: float = 5.0) -> None:
        """Stop accepting, cut every open connection, wait for their rows (requests in flight: error rows)."""
        self._closing = True
        if self._server is not None:
            try:
                self._server.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            self._server.close()
        with self._lock:
            for sock in list(self._sockets):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
        deadline = perf_counter() + join_s
        for thread in list(self._threads):
            thread.join(max(0.0, deadline - perf_counter()))

    def summary(self, time_to_solution_s: float | None = None) -> dict:
        with self._lock:
            turns = list(self.turns)
        return summarize_turns(turns, time_to_solution_s)

    # -- connections -----------------------------------------------------------------

    def _accept(self) -> None:
        while not self._closing:
            try:
                sock, _ = self._server.accept()
            except OSError:
                return
            # Each read is written on at once: without TCP_NODELAY a small write waits for the agent's
            # delayed ACK of the previous one (Nagle), ~40 ms per answer on loopback.
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self._lock:
                self._connection_ids += 1
                connection = self._connection_ids
                refused = self._active >= self.max_connections
                if not refused:
                    self._active += 1
                self._sockets.add(sock)
            target = self._refuse_busy if refused else self._serve
            thread = threading.Thread(target=target, args=(sock, connection), daemon=True)
            with self._lock:
                self._threads = [t for t in self._threads if t.is_alive()]
                self._threads.append(thread)
            thread.start()

    def _forget(self, *socks: socket.socket | None) -> None:
        with self._lock:
            for sock in socks:
                if sock is not None:
                    self._sockets.discard(sock)
                    try:
                        sock.close()
                    except OSError:
                        pass

    def _refuse_busy(self, sock: socket.socket, connection: int) -> None:
        reason = f"more than {self.max_connections} connections open at once"
        _reply(sock, 503, reason)
        self._record({"connection": connection, "status": 503, "ok": False, "error": f"refused: {reason}"},
                     forwarded=False)
        _drain(sock)
        self._forget(sock)

    def _serve(self, sock: socket.socket, connection: int) -> None:
        client, upstream = _Client(sock), None
        try:
            while not self._closing:
                try:
                    request = client.read_request(self.max_request_bytes)
                except Malformed as exc:
                    _reply(sock, exc.status, exc.reason)
                    self._record({"connection": connection, "status": exc.status, "ok": False,
                                  "error": f"refused: {exc.reason}", "request_bytes": len(client.buf)},
                                 forwarded=False)
                    _drain(sock)
                    return
                except OSError:
                    return
                if request is None:
                    return
                with self._lock:
                    over = self.max_turns is not None and self._sequence >= self.max_turns
                if over:
                    _reply(sock, 429, f"the session's limit of {self.max_turns} requests is reached")
                    self._record({"connection": connection, "status": 429, "ok": False, "method": _method(request[1]),
                                  "path": _path(request[1]),
                                  "error": f"refused: more than {self.max_turns} requests"}, forwarded=False)
                    return
                upstream, keep = self._turn(client, upstream, request, connection)
                if not keep:
                    return
        finally:
            self._forget(sock, upstream)
            with self._lock:
                self._active -= 1

    def _connect(self) -> socket.socket:
        upstream = socket.create_connection(self.upstream, timeout=30)
        # Blocking, with the read timeout in the kernel (SO_RCVTIMEO), as adapters/wire.py does: a Python
        # timeout would poll() before every read and wait on the transmit-stamp queue (rxstamp.drain_tx).
        upstream.settimeout(None)
        whole = int(self.read_timeout_s)
        upstream.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO,
                            struct.pack("@ll", whole, max(1, int((self.read_timeout_s - whole) * 1e6))))
        upstream.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self._lock:
            self._sockets.add(upstream)
        return upstream

    def _turn(self, client: _Client, upstream: socket.socket | None, request: tuple, connection: int):
        """Forward one request and its answer; record the turn. Returns (upstream socket or None, keep going)."""
        raw, line, headers, body = request
        method, path = _method(line), _path(line)
        row = {"connection": connection, "method": method, "path": path, "api": api_of(path),
               **request_facts(body), "request_bytes": len(raw)}
        row.pop("json", None)
        turn = self._next_turn()
        if upstream is not None and not _idle_and_alive(upstream):
            self._forget(upstream)  # the endpoint closed it while idle (llama-server does after a stream)
            upstream = None
        reused = upstream is not None
        for attempt in (1, 2):
            if upstream is None:
                try:
                    upstream = self._connect()
                except OSError as exc:
                    _reply(client.sock, 502, f"could not connect to the endpoint: {exc}")
                    self._record({**row, "turn": turn, "status": 502, "ok": False,
                                  "error": f"endpoint unreachable: {exc}"})
                    return None, False
            reader, response, error, sent_any = self._exchange(client, upstream, raw, line, row["api"])
            if sent_any or response.bytes or not reused or attempt == 2 or self._closing:
                break
            # A kept-alive connection the endpoint closed as the request went out: nothing reached the agent
            # and the endpoint answered nothing, so the request goes again once, on a fresh connection.
            self._forget(upstream)
            upstream, reused = None, False
        if error is not None and not sent_any and not self._closing and not error.startswith("the agent closed"):
            _reply(client.sock, 502, error)
        if reader.trace.end is None:
            reader.trace.end = perf_counter()
        reader.close()
        tokens = reader.tokens()
        status = response.status
        if error is None and status is not None and status >= 400:
            error = f"HTTP {status}: {_snippet(reader)}"
        if error is None and reader.error:
            error = reader.error
        self._record({**row, "turn": turn, "status": status, "ok": error is None, "error": error,
                      "served_model": reader.served_model, "finish_reason": reader.finish_reason,
                      "streamed": reader.sse is not None, "events": reader.events,
                      "response_bytes": response.bytes, "timing": reader.timing(tokens), "tokens": tokens,
                      "started_s": round(reader.started - self._t0, 6)})  # fmt: skip
        keep = error is None and not response.close_after and not self._closing
        if not keep:
            self._forget(upstream)
            upstream = None
        return upstream, keep

    def _exchange(self, client: _Client, upstream: socket.socket, raw: bytes, line: bytes, api: str):
        """Send one request, forward its answer read by read; (reader, response, error or None, sent_any)."""
        stamped = self.kernel_stamps and rxstamp.enable(upstream)
        tx = self.kernel_stamps and rxstamp.enable_tx(upstream)
        offset = rxstamp.realtime_offset_ns() if (stamped or tx) else 0
        before = perf_counter()
        reader = TurnReader(api, before)
        reader.started = before
        response = _Response(line.split(b" ", 1)[0], reader)
        sent_any = False
        error = None
        try:
            upstream.sendall(raw)
            now = perf_counter()
            reader.trace.start = rxstamp.sent_at(upstream, offset, before, now) if tx else now
            while not response.done:
                if stamped:
                    data, ancillary, _, _ = upstream.recvmsg(READ, rxstamp.ANCILLARY_BYTES)
                    now = rxstamp.arrival(ancillary, offset, perf_counter())
                else:
                    data = upstream.recv(READ)
                    now = perf_counter()
                if not data:
                    if response.status is not None and response.remaining is None and response.decoder is None:
                        response.done = True  # a body delimited by the close
                        break
                    raise RemoteProtocolError("the endpoint closed the connection before the answer was complete")
                try:
                    client.sock.sendall(data)  # forward first: the agent never waits for the bookkeeping
                except OSError as exc:
                    raise SessionEnded(f"the agent closed its connection mid-answer ({exc})") from None
                sent_any = True
                reader.trace.end = now
                reader.trace.chunks += 1
                response.feed(data, now)
        except SessionEnded as exc:
            error = str(exc)
        except (OSError, RemoteProtocolError) as exc:
            if self._closing:
                error = "session ended (the harness's limit) while the answer was in flight"
            elif isinstance(exc, (socket.timeout, BlockingIOError)):
                error = f"the endpoint sent nothing for {self.read_timeout_s:g} s"
            else:
                error = f"forwarding failed: {exc}"
        return reader, response, error, sent_any

    # -- rows ------------------------------------------------------------------------

    def _next_turn(self) -> int:
        with self._lock:
            self._sequence += 1
            return self._sequence

    def _record(self, fields: dict, forwarded: bool = True) -> None:
        """Append one row and flush it now: a row written is never lost, whatever happens after."""
        row = {"schema_version": TURN_SCHEMA_VERSION, **self.labels, "turn": None, "forwarded": forwarded,
               "method": None, "path": None, "api": None, "model": None, "stream": None, "status": None,
               "ok": False, "error": None, "timing": None, "tokens": None}
        row.update(fields)
        if row["turn"] is None:
            row["turn"] = self._next_turn()
        line = json.dumps(row, sort_keys=True) + "\n"
        with self._lock:
            self.turns.append(row)
            with open(self.turns_path, "a", encoding="utf-8") as handle:
                handle.write(line)
                handle.flush()


def _idle_and_alive(sock: socket.socket) -> bool:
    """A kept-alive endpoint connection that reads as readable while idle was closed (or sent junk)."""
    rxstamp.drain_tx(sock)  # a late transmit stamp would make it look readable
    try:
        readable, _, _ = select.select([sock], [], [], 0)
    except (OSError, ValueError):
        return False
    return not readable


def _drain(sock: socket.socket, limit_s: float = 1.0) -> None:
    """Let the agent read the proxy's own answer before the socket goes: closing with unread input resets
    the connection, and the agent would see a reset instead of the 4xx/5xx. At most `limit_s`."""
    deadline = perf_counter() + limit_s
    try:
        while (left := deadline - perf_counter()) > 0:
            sock.settimeout(left)
            if not sock.recv(READ):
                break
    except OSError:
        pass


def _method(line: bytes) -> str:
    return line.split(b" ", 1)[0].decode("latin-1")[:16]


def _path(line: bytes) -> str:
    """The request path without its query string: a query can carry a credential (`?key=`), and rows are
    shared; headers (Authorization) are never recorded either."""
    parts = line.split(b" ")
    return parts[1].split(b"?", 1)[0].decode("latin-1")[:500] if len(parts) > 1 else ""


def _snippet(reader: TurnReader) -> str:
    text = b"".join(reader.body)[:200].decode("utf-8", "replace").strip()
    return " ".join(text.split()) or "(no body)"


ProxyFactory = Callable[..., MeasuringProxy]


def proxy_factory(endpoint: str, turns_path: Path, labels: dict, timeout_s: float | None = None) -> MeasuringProxy:
    """What the runner hands the repo-task executor: a proxy for one agent session."""
    read = READ_TIMEOUT_S if timeout_s is None else max(1.0, float(timeout_s))
    return MeasuringProxy(endpoint, turns_path, labels, read_timeout_s=read)


def main(argv: list[str] | None = None) -> int:
    """`python -m benchpack.agents.proxy ENDPOINT TURNS_FILE`: the proxy on its own, in front of any agent.

    Prints `listening on URL` (the endpoint's URL with the proxy's host and port), then forwards and records
    until its standard input closes or it is interrupted.
    """
    import argparse
    import sys

    parser = argparse.ArgumentParser(prog="python -m benchpack.agents.proxy", description=main.__doc__)
    parser.add_argument("endpoint", help="the model endpoint, e.g. http://127.0.0.1:8080/v1/chat/completions")
    parser.add_argument("turns", help="where to append one JSON row per request (agent-turns.jsonl)")
    parser.add_argument("--max-connections", type=int, default=MAX_CONNECTIONS)
    args = parser.parse_args(argv)
    try:
        proxy = MeasuringProxy(args.endpoint, Path(args.turns), max_connections=args.max_connections)
    except ValueError as exc:
        print(f"benchpack proxy: endpoint: {exc}", file=sys.stderr)
        return 2
    with proxy:
        print(f"listening on {proxy.url_for()}", flush=True)
        try:
            sys.stdin.read()
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
