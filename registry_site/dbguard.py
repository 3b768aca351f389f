"""503 with Retry-After when PostgreSQL refuses a connection, instead of a 500.

A full pool (no connection free within `DATABASE_POOL_TIMEOUT_S`), a server at its connection limit
(`too many connections`, SQLSTATE 53300), one starting up or shutting down (57P03) or unreachable
(class 08, or no SQLSTATE at all: the connection never opened) is a temporary state of the service,
not a bug: the client is told to come back (`Retry-After: DATABASE_RETRY_AFTER_S`). Every other
database error — a bad query, a constraint — stays a 500 that is logged and fixed.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.db import OperationalError
from django.http import HttpResponse

log = logging.getLogger(__name__)

# SQLSTATEs that mean "no connection for you now": too many connections, cannot connect now,
# and class 08 (connection exception).
_REFUSED = ("53300", "57P03")


def connection_refused(exc: BaseException) -> bool:
    """True when `exc` (a django.db OperationalError) is PostgreSQL refusing or failing a connection."""
    if not isinstance(exc, OperationalError):
        return False
    try:
        import psycopg
        from psycopg_pool import PoolTimeout
    except ImportError:  # SQLite-only install: nothing here is a connection refusal
        return False
    cause = exc.__cause__
    if isinstance(cause, PoolTimeout):
        return True
    if not isinstance(cause, psycopg.OperationalError):
        return False
    state = getattr(cause, "sqlstate", None)
    return state is None or state in _REFUSED or state.startswith("08")


def unavailable_response() -> HttpResponse:
    response = HttpResponse("The database is busy; try again shortly.\n", status=503,
                            content_type="text/plain; charset=utf-8")
    response["Retry-After"] = str(getattr(settings, "DATABASE_RETRY_AFTER_S", 5))
    response["Cache-Control"] = "no-store"
    return response


class DatabaseUnavailableMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        try:
            return self.get_response(request)
        except OperationalError as exc:  # raised outside a view, e.g. by another middleware
            if connection_refused(exc):
                log.warning("database refused a connection: %s", exc)
                return unavailable_response()
            raise

    def process_exception(self, request, exc):
        if connection_refused(exc):
            log.warning("database refused a connection: %s", exc)
            return unavailable_response()
        return None
