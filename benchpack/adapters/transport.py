"""The HTTP client adapters share, and endpoint trouble turned into error text.

One `httpx.Client` per adapter instance keeps the connection alive between
executions, so a measured request does not pay a TCP handshake that a
warmed-up real client would not pay either. Plain-http traffic goes through
`FastHTTPTransport` (see that module for why).
"""

from __future__ import annotations

import json
import socket
import time
from contextlib import contextmanager
from typing import Any, Callable, Iterator

import httpx

from benchpack.adapters.base import AdapterRequest, AdapterResult, StreamTrace
from benchpack.adapters.fasttransport import FastHTTPTransport, arrival_reader, last_arrival, request_sent
from benchpack.measurement.window import timed_window

perf_counter = time.perf_counter

# Streams are read with iter_raw(); asking for identity keeps those bytes
# the plain event stream.
STREAM_HEADERS = {"Accept-Encoding": "identity", "Accept": "text/event-stream, application/x-ndjson, application/json"}


JSON_STREAM_HEADERS = {**STREAM_HEADERS, "Content-Type": "application/json"}


class LeanClient(httpx.Client):
    """The adapters' own client: an httpx.Client over FastHTTPTransport, with a short way for the request they time.

    Through `post_stream`, a JSON POST to an http:// URL goes straight to the
    transport while the client is as `make_client` built it (no cookies
    stored, no auth, no event hooks, default headers): httpx.Client's
    request building, auth and redirect flow, cookie extraction and request
    logging then have nothing to do, and skipping them saves about half a
    millisecond of CPU per request (docs/measurement.md). The request sent is
    the same: the client's default headers merged with the adapter's, the
    same timeouts. Anything else takes the full httpx path.
    """

    def __init__(self, transport: FastHTTPTransport | None = None) -> None:
        # A caller may pass its own FastHTTPTransport (a runner host's PinnedTransport).
        self._fast = transport or FastHTTPTransport()
        super().__init__(transport=self._fast, timeout=httpx.Timeout(600.0), follow_redirects=False)
        self._default_headers = self.headers.multi_items()
        self._json_headers = httpx.Headers(self.headers)
        self._json_headers.update(JSON_STREAM_HEADERS)
        self._urls: dict[str, httpx.URL] = {}

    def can_go_direct(self, url: str) -> bool:
        return (url.startswith("http://") and not self.is_closed and not self.cookies and self.auth is None
                and not any(self.event_hooks.values()) and self.headers.multi_items() == self._default_headers)

    @contextmanager
    def direct_post(self, url: str, payload: bytes, timeout: httpx.Timeout) -> Iterator[httpx.Response]:
        parsed = self._urls.get(url)
        if parsed is None:
            if len(self._urls) > 64:
                self._urls.clear()
            parsed = self._urls[url] = httpx.URL(url)
        request = httpx.Request("POST", parsed, content=payload, headers=self._json_headers,
                                extensions={"timeout": timeout.as_dict()})
        response = self._fast.handle_request(request)
        response.request = request
        try:
            if "set-cookie" in response.headers:  # as httpx.Client would keep them
                self.cookies.extract_cookies(response)
            yield response
        finally:
            response.close()


def make_client() -> httpx.Client:
    return LeanClient()


@contextmanager
def post_stream(client: httpx.Client, url: str, payload: bytes, timeout_s: float) -> Iterator[httpx.Response]:
    """POST a JSON body and yield the response with its body not read yet."""
    timeout = request_timeout(timeout_s)
    if isinstance(client, LeanClient) and client.can_go_direct(url):
        with client.direct_post(url, payload, timeout) as response:
            yield response
    else:
        with client.stream("POST", url, content=payload, timeout=timeout, headers=JSON_STREAM_HEADERS) as response:
            yield response


def warm_name_lookup(url: str) -> None:
    """Resolve the URL's host once, untimed; a failure is left for the request to report."""
    try:
        parsed = httpx.URL(url)
        socket.getaddrinfo(parsed.host, parsed.port or (443 if parsed.scheme == "https" else 80),
                           type=socket.SOCK_STREAM)
    except (OSError, httpx.InvalidURL, UnicodeError):
        pass


def request_timeout(timeout_s: float) -> httpx.Timeout:
    return httpx.Timeout(timeout_s)


def describe_transport_error(exc: httpx.HTTPError, url: str, timeout_s: float, events_seen: int) -> str:
    if isinstance(exc, httpx.ConnectTimeout):
        return f"timed out after {timeout_s:g}s connecting to {url}"
    if isinstance(exc, httpx.ConnectError):
        return f"cannot connect to {url}: {exc}"
    if isinstance(exc, httpx.TimeoutException):
        return f"timed out after {timeout_s:g}s waiting for {url} ({events_seen} events received)"
    if isinstance(exc, httpx.RemoteProtocolError):
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


def read_timed(response: httpx.Response, trace: StreamTrace, timeout_s: float,
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

    def __init__(self, client: httpx.Client | None = None) -> None:
        self._client = client

    @property
    def client(self) -> httpx.Client:
        if self._client is None:
            self._client = make_client()
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()

    def _prepared_client(self, url: str) -> httpx.Client:
        """The client, ready before a timed request.

        The first request of a fresh process would otherwise pay, inside
        its clock, for building the client (tens of milliseconds: an SSL
        context among others) and for the C library's first name lookup
        (loading the resolver configuration, a few milliseconds even for
        127.0.0.1). A warmed-up client pays neither, so neither is part of
        what a request costs.
        """
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
        with timed_window():
            trace.start = perf_counter()
            try:
                with post_stream(client, url, payload, request.timeout_s) as response:
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
            except httpx.HTTPError as exc:
                if trace.end is None:
                    trace.end = perf_counter()
                if state.error is None:  # an earlier malformed or error event is the first thing that went wrong
                    state.error = describe_transport_error(exc, url, request.timeout_s, len(state.events))
                if response_payload is None:
                    response_payload = {"error": state.error}
        if trace.end is None:
            trace.end = perf_counter()
        return self._result(request, body, response_payload, state, trace), trace
