"""The plain-http wire's own error types (benchpack.adapters.wire), without httpx.

They are named as httpx names its own, so a message that shows the type
(`ReadError talking to ...`, a probe's `no answer (ConnectError)`) reads the
same whichever path carried the request; fasttransport maps each to its
httpx twin for the httpx path.
"""

from __future__ import annotations


class TransportError(Exception):
    """Anything that went wrong on the wire."""


class TimeoutException(TransportError):
    pass


class ConnectTimeout(TimeoutException):
    pass


class ReadTimeout(TimeoutException):
    pass


class WriteTimeout(TimeoutException):
    pass


class ConnectError(TransportError):
    pass


class ReadError(TransportError):
    pass


class RemoteProtocolError(TransportError):
    pass
