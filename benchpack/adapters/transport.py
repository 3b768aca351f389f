"""The HTTP client adapters share, and endpoint trouble turned into error text.

One client per adapter instance keeps the connection alive between
executions, so a measured request does not pay a TCP handshake that a
warmed-up real client would not pay either. Which client:

* an `http://` endpoint, no client injected: `wire.PlainClient`, which
  needs no httpx (importing httpx, with ssl, email and idna, costs about as
  much CPU as a 16-stream run's whole request work; docs/measurement.md);
* an injected client (a runner host's pinned one, a test's mock) or an
  `https://` endpoint: httpx, imported then (adapters.httpclient.LeanClient
  over fasttransport.FastHTTPTransport, the same wire code for http://).

Both carry the timed request the same way (wire.arrival_reader and the
kernel stamps) and fail with the same words (describe_transport_error).
"""

from __future__ import annotations

import json
import socket
import threading
import time
from contextlib import contextmanager
from typing import Any, Callable, Iterator
from urllib.parse import urlsplit

from benchpack.adapters import wire
from benchpack.adapters.base import AdapterRequest, AdapterResult, StreamTrace
from benchpack.adapters.wire import PlainClient, arrival_reader, earliest_arrivals, last_arrival, request_sent
from benchpack.measurement.window import timed_window

perf_counter = time.perf_counter

# Streams are read with iter_raw(); asking for identity keeps those bytes
# the plain event stream.
STREAM_HEADERS = {"Accept-Encoding": "identity", "Accept": "text/event-stream, application/x-ndjson, application/json"}


JSON_STREAM_HEADERS = {**STREAM_HEADERS, "Content-Type": "application/json"}


# The plain client's head for the timed POST: the same names, values and order as the httpx path's.
_JSON_HEADER_LINES = [(name.encode(), value.encode()) for name, value in JSON_STREAM_HEADERS.items()]


def make_client() -> Any:
    """The adapters' httpx client (LeanClient); httpx is imported here, for the httpx path only."""
    from benchpack.adapters.httpclient import LeanClient

    return LeanClient()


def __getattr__(name: str) -> Any:
    # LeanClient is httpx's side (adapters.httpclient): importing this module must not import httpx,
    # so it is looked up there when asked for.
    if name == "LeanClient":
        from benchpack.adapters import httpclient

        return getattr(httpclient, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def header_lines(extra: tuple[tuple[str, str], ...] = ()) -> list[tuple[bytes, bytes]]:
    """The plain client's head for the timed POST with an adapter's own headers after the shared ones
    (built once per adapter class, not per request)."""
    return _JSON_HEADER_LINES + [(name.encode(), value.encode()) for name, value in extra]


@contextmanager
def post_stream(client: Any, url: str, payload: bytes, timeout_s: float,
                headers: tuple[tuple[str, str], ...] = (),
                lines: list[tuple[bytes, bytes]] = _JSON_HEADER_LINES) -> Iterator[Any]:
    """POST a JSON body and yield the response with its body not read yet (PlainClient or an httpx client).

    `headers`: an adapter's own headers (anthropic-messages' `anthropic-version`), sent after the shared
    ones on either path; `lines` is the same set as the plain client's head (`header_lines(headers)`)."""
    if isinstance(client, PlainClient):
        with client.post_json(url, payload, timeout_s, lines) as response:
            yield response
    else:
        from benchpack.adapters.httpclient import post_stream as httpx_post_stream

        with httpx_post_stream(client, url, payload, timeout_s, headers) as response:
            yield response


def warm_name_lookup(url: str) -> None:
    """Resolve the URL's host once, untimed; a failure is left for the request to report."""
    try:
        parsed = urlsplit(url)
        if parsed.hostname:
            socket.getaddrinfo(wire.lookup_host(parsed.hostname),
                               parsed.port or (443 if parsed.scheme == "https" else 80), type=socket.SOCK_STREAM)
    except (OSError, ValueError, UnicodeError):
        pass


def transport_errors(client: Any) -> type[Exception]:
    """What a request through `client` raises for endpoint trouble: wire's errors, or httpx's."""
    if isinstance(client, PlainClient):
        return wire.TransportError
    import httpx  # the httpx path: already imported with its client

    return httpx.HTTPError


def _error_kind(exc: BaseException) -> str | None:
    if isinstance(exc, wire.TransportError):
        for cls, kind in _WIRE_KINDS:
            if isinstance(exc, cls):
                return kind
        return None
    from benchpack.adapters.httpclient import error_kind

    return error_kind(exc)


_WIRE_KINDS = ((wire.ConnectTimeout, "connect timeout"), (wire.ConnectError, "connect"),
               (wire.TimeoutException, "timeout"), (wire.RemoteProtocolError, "protocol"))


def describe_transport_error(exc: Exception, url: str, timeout_s: float, events_seen: int) -> str:
    """The row's error text for endpoint trouble; the same words whichever path (wire or httpx) failed."""
    kind = _error_kind(exc)
    if kind == "connect timeout":
        return f"timed out after {timeout_s:g}s connecting to {url}"
    if kind == "connect":
        return f"cannot connect to {url}: {exc}"
    if kind == "timeout":
        return f"timed out after {timeout_s:g}s waiting for {url} ({events_seen} events received)"
    if kind == "protocol":
        if events_seen:
            return f"connection closed mid-stream after {events_seen} events: {exc}"
        return f"connection closed by {url}: {exc}"
    return f"{type(exc).__name__} talking to {url}: {exc}"


def error_body(content: bytes) -> Any:
    """The body of an error response as JSON when it is JSON, else as text."""
    try:
        return json.loads(content)
    except (ValueError, UnicodeDecodeError):
        return {"text": content.decode("utf-8", "replace")}


def describe_http_error(status: int, body: Any) -> str:
    message = None
    if isinstance(body, dict):
        err = body.get("error")
        if isinstance(err, dict):
            message = err.get("message") or json.dumps(err)
        elif isinstance(err, str):
            message = err
        elif "text" in body:
            message = body["text"]
    if message is None:
        message = json.dumps(body)
    message = " ".join(str(message).split())
    return f"HTTP {status}: {message[:300]}"


def read_timed(response: Any, trace: StreamTrace, timeout_s: float,
               take: Callable[[list[float], list[bytes]], None], failed: Callable[[], bool]) -> None:
    """Read a streamed body, each network read stamped with its arrival time.

    `take(times, reads)` parses what has arrived (it is called again with
    more, so it keeps track of what it took); reading stops at the body's
    end, the request's deadline, or once `failed()` says an error event
    was seen. `trace.end` is when reading stopped: parsing is not part of
    wall_s. If the stream breaks, what did arrive is still taken.
    """
    deadline = trace.start + timeout_s
    read_arrivals = arrival_reader(response)
    times: list[float] = []
    reads: list[bytes] = []
    try:
        while True:
            trace.end = None
            stop = read_arrivals(times, reads, deadline)
            trace.end = perf_counter()
            if stop == "end":  # the kernel's stamp of the body's last read, where there is one
                trace.end = last_arrival(response) or trace.end
            take(times, reads)
            if stop != "pause" or failed():
                break
    finally:
        if trace.end is None:
            trace.end = perf_counter()
        trace.chunks = len(reads)
        trace.earliest = earliest_arrivals(response)
        take(times, reads)


class ClientOwningAdapter:
    """What both adapters share: the client lifecycle (an injected client, or
    one made on first use and kept for connection reuse across repetitions)
    and the timed request.

    A subclass names its URL rule and request body (`endpoint_url`,
    `request_body`), the per-response state it parses into (`new_state`:
    an object with `error` and `events`), and how to read a stream, a whole
    body and build the result (`_read_stream`, `_take_whole`, `_result`).
    """

    endpoint_url: Callable[[str], str]
    request_body: Callable[[AdapterRequest], dict]
    new_state: Callable[[], Any]
    # Headers the API requires beside the shared ones, and the plain client's head with them (a subclass
    # that names `request_headers` sets `_header_lines = header_lines(request_headers)`).
    request_headers: tuple[tuple[str, str], ...] = ()
    _header_lines: list[tuple[bytes, bytes]] = _JSON_HEADER_LINES

    def __init__(self, client: Any = None) -> None:
        self._client = client  # injected (httpx), or the httpx client made for an https:// endpoint
        self._injected = client is not None
        self._plain: PlainClient | None = None  # made for an http:// endpoint when none was injected
        self._plain_urls: dict[str, bool] = {}
        self._making = threading.Lock()  # the concurrency lane's threads may all ask for the client at once

    @property
    def client(self) -> Any:
        """The httpx client: the injected one, else one made now (httpx is imported then)."""
        if self._client is None:
            self._client = make_client()
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
        if self._plain is not None:
            self._plain.close()

    def _goes_plain(self, url: str) -> bool:
        if self._injected:
            return False  # an injected client carries every request (a runner host's pins it to one address)
        plain = self._plain_urls.get(url)
        if plain is None:
            if len(self._plain_urls) > 64:
                self._plain_urls.clear()
            plain = self._plain_urls[url] = wire.plain_url(url)
        return plain

    def _prepared_client(self, url: str) -> Any:
        """The client for `url`, ready before a timed request.

        The first request of a fresh process would otherwise pay, inside
        its clock, for building the client (for httpx, tens of milliseconds:
        an SSL context among others) and for the C library's first name lookup
        (loading the resolver configuration, a few milliseconds even for
        127.0.0.1). A warmed-up client pays neither, so neither is part of
        what a request costs.
        """
        if self._goes_plain(url):
            if self._plain is None:
                with self._making:  # the others wait until the first name lookup is done too
                    if self._plain is None:
                        plain = PlainClient()
                        warm_name_lookup(url)
                        self._plain = plain
            return self._plain
        first_use = self._client is None
        client = self.client
        if first_use:
            warm_name_lookup(url)
        return client

    def run(self, request: AdapterRequest) -> AdapterResult:
        return self.run_traced(request)[0]

    def run_traced(self, request: AdapterRequest) -> tuple[AdapterResult, StreamTrace]:
        """Like run(), plus the absolute clock readings selftest compares with the server's."""
        url = self.endpoint_url(request.endpoint)
        body = self.request_body(request)
        payload = json.dumps(body).encode()
        state = self.new_state()
        trace = StreamTrace()
        response_payload: Any = None
        # The client, and the process's first name lookup, are made here,
        # before the clock starts: nothing but the request itself is timed.
        client = self._prepared_client(url)
        endpoint_trouble = transport_errors(client)
        with timed_window():
            trace.start = perf_counter()
            try:
                with post_stream(client, url, payload, request.timeout_s, self.request_headers,
                                 self._header_lines) as response:
                    # The clock starts when the request's last byte left (the kernel's transmit stamp, or
                    # the reading as sendall() returned), not at the reading above: with many streams in
                    # one process a thread waits for the GIL between the two, and the server never sees
                    # that wait (docs/measurement.md). Other transports keep the reading above.
                    trace.start = request_sent(response) or trace.start
                    trace.first_byte = last_arrival(response) or perf_counter()
                    if response.status_code >= 400:
                        response_payload = error_body(response.read())
                        trace.end = perf_counter()
                        state.error = describe_http_error(response.status_code, response_payload)
                    elif request.stream:
                        response_payload = state.events
                        self._read_stream(response, state, trace, request.timeout_s)
                    else:
                        raw = response.read()
                        trace.end = perf_counter()
                        response_payload = self._take_whole(raw, state)
            except endpoint_trouble as exc:
                if trace.end is None:
                    trace.end = perf_counter()
                if state.error is None:  # an earlier malformed or error event is the first thing that went wrong
                    state.error = describe_transport_error(exc, url, request.timeout_s, len(state.events))
                if response_payload is None:
                    response_payload = {"error": state.error}
        if trace.end is None:
            trace.end = perf_counter()
        return self._result(request, body, response_payload, state, trace), trace
