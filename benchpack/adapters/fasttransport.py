"""A lean HTTP/1.1 transport for httpx, for plain-http streaming: benchpack.adapters.wire as an httpx transport.

Why it exists: measured side by side (docs/measurement.md), httpx's default
transport (httpcore + h11, pure-Python framing) costs several times more CPU
per streamed chunk than the socket read itself, and that cost shows up as
TTFT/TPOT error on fast local servers. This transport keeps httpx as the
client API (URLs, headers, timeouts, error types, proxies, mocking) and only
replaces the wire handling for `http://` URLs with wire's (one `recv()` per
network read, chunked decoding with `bytes.find`, one body piece handed up
per read). `https://` requests go to httpx's own transport unchanged.

It is what the httpx path uses: an injected client, a runner host's pinned
transport (adapters.pinned), https. A plain `http://` run needs no httpx
at all and uses wire.PlainClient, the same wire code. Wire errors become
the httpx errors of the same name here, so both paths fail alike.

Readers that time the body one network read at a time take
`arrival_reader(response)` (wire.arrival_reader, re-exported).
"""

from __future__ import annotations

import threading
from typing import Iterator, NoReturn

import httpx

from benchpack.adapters import wire
from benchpack.adapters.wire import (  # noqa: F401  (this module's API before wire existed)
    QUIET_TICK_S,
    ArrivalReader,
    arrival_reader,
    last_arrival,
    request_sent,
)

_BODY = wire.BODY
_HTTPX_ERRORS: dict[type, type[httpx.HTTPError]] = {
    wire.ConnectTimeout: httpx.ConnectTimeout,
    wire.ConnectError: httpx.ConnectError,
    wire.ReadTimeout: httpx.ReadTimeout,
    wire.WriteTimeout: httpx.WriteTimeout,
    wire.ReadError: httpx.ReadError,
    wire.RemoteProtocolError: httpx.RemoteProtocolError,
}


def raise_as_httpx(exc: wire.TransportError) -> NoReturn:
    """The httpx error a wire error stands for, with the same text."""
    for cls in type(exc).__mro__:
        if cls in _HTTPX_ERRORS:
            raise _HTTPX_ERRORS[cls](str(exc)) from exc
    raise httpx.TransportError(str(exc)) from exc


class _Body(httpx.SyncByteStream):
    """A wire.Body as httpx's byte stream, its errors as httpx's."""

    def __init__(self, body: wire.Body) -> None:
        self._body = body
        self.conn = body.conn

    def __iter__(self) -> Iterator[bytes]:
        try:
            yield from self._body.pieces
        except wire.TransportError as exc:
            raise_as_httpx(exc)

    def read_arrivals(self, times: list[float], reads: list[bytes], deadline: float) -> str:
        try:
            return self._body.read_arrivals(times, reads, deadline)
        except wire.TransportError as exc:
            raise_as_httpx(exc)

    def close(self) -> None:
        self._body.close()


class FastHTTPTransport(httpx.BaseTransport):
    def __init__(self, kernel_stamps: bool = True) -> None:
        self._pool = wire.Pool(kernel_stamps)
        self._lock = threading.Lock()
        # httpx's own transport for https://, made on first use: building it builds an SSL context (tens of
        # ms of CPU), which a run against a plain-http server never needs.
        self._tls_transport: httpx.HTTPTransport | None = None

    @property
    def _idle(self) -> dict:
        return self._pool.idle

    @property
    def _tls(self) -> httpx.HTTPTransport:
        with self._lock:
            if self._tls_transport is None:
                self._tls_transport = httpx.HTTPTransport()
            return self._tls_transport

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.scheme != "http":
            return self._tls.handle_request(request)
        timeouts = request.extensions.get("timeout", {})
        key = (request.url.host, request.url.port or 80)
        try:
            conn, head = wire.open_response(lambda fresh: self._acquire(key, timeouts, fresh),
                                            lambda: self._serialize(request), timeouts)
        except wire.TransportError as exc:
            raise_as_httpx(exc)
        body = _Body(wire.response_body(conn, head, request.method, self._release))
        status, reason, headers, _ = head
        return httpx.Response(status, headers=headers, stream=body,
                              extensions={"http_version": b"HTTP/1.1", "reason_phrase": reason, _BODY: body})

    def _acquire(self, key: tuple, timeouts: dict, fresh: bool = False) -> tuple[wire.Conn, bool]:
        return self._pool.acquire(key, timeouts.get("connect"), fresh)

    def _release(self, conn: wire.Conn) -> None:
        self._pool.release(conn)

    @staticmethod
    def _serialize(request: httpx.Request) -> bytes:
        return wire.serialize(request.method, request.url.raw_path, request.headers.raw, request.read())

    def close(self) -> None:
        self._pool.close()
        if self._tls_transport is not None:
            self._tls_transport.close()
