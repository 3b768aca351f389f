"""The HTTP client adapters share, and endpoint trouble turned into error text.

One `httpx.Client` per adapter instance keeps the connection alive between
executions, so a measured request does not pay a TCP handshake that a
warmed-up real client would not pay either. Plain-http traffic goes through
`FastHTTPTransport` (see that module for why).
"""

from __future__ import annotations

import json
from typing import Any

import httpx

from benchpack.adapters.fasttransport import FastHTTPTransport

# Streams are read with iter_raw(); asking for identity keeps those bytes
# the plain event stream.
STREAM_HEADERS = {"Accept-Encoding": "identity", "Accept": "text/event-stream, application/x-ndjson, application/json"}


def make_client() -> httpx.Client:
    return httpx.Client(transport=FastHTTPTransport(), timeout=httpx.Timeout(600.0), follow_redirects=False)


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
