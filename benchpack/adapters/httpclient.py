"""The adapters' httpx client: the httpx path (an https:// endpoint, or when asked for an httpx client).

A plain `http://` run never imports this module (adapters.transport uses
wire.PlainClient then); importing httpx costs about as much CPU as a short
run's whole request work (docs/measurement.md).
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

import httpx

from benchpack.adapters.fasttransport import FastHTTPTransport
from benchpack.adapters.transport import JSON_STREAM_HEADERS


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
    def direct_post(self, url: str, payload: bytes, timeout: httpx.Timeout,
                    extra: tuple[tuple[str, str], ...] = ()) -> Iterator[httpx.Response]:
        parsed = self._urls.get(url)
        if parsed is None:
            if len(self._urls) > 64:
                self._urls.clear()
            parsed = self._urls[url] = httpx.URL(url)
        headers = self._json_headers
        if extra:
            headers = httpx.Headers(headers)
            headers.update(dict(extra))
        request = httpx.Request("POST", parsed, content=payload, headers=headers,
                                extensions={"timeout": timeout.as_dict()})
        response = self._fast.handle_request(request)
        response.request = request
        try:
            if "set-cookie" in response.headers:  # as httpx.Client would keep them
                self.cookies.extract_cookies(response)
            yield response
        finally:
            response.close()


@contextmanager
def post_stream(client: httpx.Client, url: str, payload: bytes, timeout_s: float,
                extra: tuple[tuple[str, str], ...] = ()) -> Iterator[httpx.Response]:
    """POST a JSON body through an httpx client and yield the response with its body not read yet;
    `extra`: an adapter's own headers, after the shared ones."""
    timeout = httpx.Timeout(timeout_s)
    if isinstance(client, LeanClient) and client.can_go_direct(url):
        with client.direct_post(url, payload, timeout, extra) as response:
            yield response
    else:
        headers = {**JSON_STREAM_HEADERS, **dict(extra)}
        with client.stream("POST", url, content=payload, timeout=timeout, headers=headers) as response:
            yield response


def error_kind(exc: BaseException) -> str | None:
    """describe_transport_error's kinds for an httpx error."""
    if isinstance(exc, httpx.ConnectTimeout):
        return "connect timeout"
    if isinstance(exc, httpx.ConnectError):
        return "connect"
    if isinstance(exc, httpx.TimeoutException):
        return "timeout"
    if isinstance(exc, httpx.RemoteProtocolError):
        return "protocol"
    return None
