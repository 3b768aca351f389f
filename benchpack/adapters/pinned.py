"""Talk to one allowlisted address only: resolve a name once, pin it, refuse redirects.

A service that runs benchmarks for other people (the registry's runner
hosts) must not become a way to reach other machines. Checking the URL
is not enough: a host name can resolve to a different address on the next
lookup (DNS rebinding), and an endpoint can answer with a redirect. So:

* `pin_endpoint(url, allowed)` resolves the URL's host *once* and keeps
  the first address that is on the allowlist (an IP literal must itself be
  on it); anything else is `AddressNotAllowed`, before a byte is sent;
* `PinnedTransport` sends every request to the pinned address and never
  asks DNS again (the `Host` header and, for https, the TLS server name stay
  the URL's own name), refuses any other host or port, and turns a 3xx
  answer into `RedirectRefused` instead of handing a `Location` to anyone.

The adapters never follow redirects anyway (`follow_redirects=False`); the
explicit refusal makes the row's error say why.
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass
from typing import Callable
from urllib.parse import urlsplit

import httpx

from benchpack.adapters.fasttransport import FastHTTPTransport

DEFAULT_PORTS = {"http": 80, "https": 443}

Resolver = Callable[[str, int], list[str]]


class AddressNotAllowed(httpx.TransportError):
    """The request would go to an address that is not on the allowlist."""


class RedirectRefused(httpx.TransportError):
    """The endpoint answered with a redirect; a pinned client never follows one."""


@dataclass(frozen=True)
class Pin:
    scheme: str
    host: str  # as written in the URL (a name or an IP literal), lower case
    port: int
    address: str  # the IP address every connection goes to

    def describe(self) -> str:
        shown = self.host if self.host == self.address else f"{self.host} -> {self.address}"
        return f"{self.scheme}://{shown}:{self.port}"


def canonical_address(text: str) -> str:
    """An IP address in canonical form; ValueError for anything that is not one."""
    return str(ipaddress.ip_address(text.strip().strip("[]")))


def system_resolver(host: str, port: int) -> list[str]:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(canonical_address(info[4][0].split("%")[0]) for info in infos))


def split_endpoint(url: str) -> tuple[str, str, int]:
    """(scheme, host, port) of an http(s) URL; ValueError naming what is wrong."""
    parts = urlsplit(url)
    if parts.scheme not in DEFAULT_PORTS:
        raise ValueError(f"{url!r}: only http:// and https:// endpoints can be pinned")
    if parts.username is not None or parts.password is not None:
        raise ValueError(f"{url!r}: credentials in the URL are not allowed")
    if not parts.hostname:
        raise ValueError(f"{url!r}: no host")
    try:
        port = parts.port or DEFAULT_PORTS[parts.scheme]
    except ValueError:
        raise ValueError(f"{url!r}: the port is not a number between 0 and 65535") from None
    return parts.scheme, parts.hostname.lower(), port


def pin_endpoint(url: str, allowed_addresses: list[str], resolver: Resolver = system_resolver) -> Pin:
    """Resolve `url`'s host once and pin the first resolved address that is allowed."""
    scheme, host, port = split_endpoint(url)
    allowed = [canonical_address(a) for a in allowed_addresses]
    try:
        literal = canonical_address(host)
    except ValueError:
        literal = None
    if literal is not None:
        if literal not in allowed:
            raise AddressNotAllowed(f"{url}: address {literal} is not on the allowlist ({', '.join(allowed) or 'empty'})")
        return Pin(scheme, host, port, literal)
    try:
        resolved = resolver(host, port)
    except (OSError, UnicodeError) as exc:
        raise AddressNotAllowed(f"{url}: cannot resolve {host}: {exc}") from None
    for address in resolved:
        if address in allowed:
            return Pin(scheme, host, port, address)
    raise AddressNotAllowed(
        f"{url}: {host} resolves to {', '.join(resolved) or 'nothing'}; none of these is on the allowlist "
        f"({', '.join(allowed) or 'empty'})"
    )


class PinnedTransport(FastHTTPTransport):
    """FastHTTPTransport that connects only to the pinned address of one endpoint."""

    def __init__(self, pin: Pin) -> None:
        super().__init__()
        self.pin = pin
        self._address_host = f"[{pin.address}]" if ":" in pin.address else pin.address

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        port = url.port or DEFAULT_PORTS.get(url.scheme)
        if (url.scheme, url.host.lower(), port) != (self.pin.scheme, self.pin.host, self.pin.port):
            raise AddressNotAllowed(f"{url} is not the allowlisted endpoint {self.pin.describe()}", request=request)
        # httpx set the Host header from the URL when the request was built; only
        # the address the socket connects to changes. TLS keeps verifying the name.
        request.url = url.copy_with(host=self.pin.address)
        if url.scheme == "https":
            request.extensions = {**request.extensions, "sni_hostname": self.pin.host}
        response = super().handle_request(request)
        request.url = url
        if 300 <= response.status_code < 400:
            location = response.headers.get("location", "")
            response.close()
            raise RedirectRefused(
                f"the endpoint answered HTTP {response.status_code} redirecting to {location or '(no Location)'}; "
                f"redirects are refused: only {self.pin.describe()} is allowlisted",
                request=request,
            )
        return response
