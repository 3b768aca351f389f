"""Path ids are checked before they reach a query.

URLs take `<str:pk>` rather than `<int:pk>` so a malformed id gets a 404 that
says why (instead of "no API endpoint"), and an id too large for the
database's integer column never reaches it.
"""

from __future__ import annotations

from rest_framework.exceptions import NotFound

MAX_ID_DIGITS = 18  # below 2**63: SQLite and PostgreSQL bigint both hold it


def whole_number_id(raw: str, what: str) -> int:
    if not raw.isascii() or not raw.isdigit() or len(raw) > MAX_ID_DIGITS:
        raise NotFound(f"no {what} with id {raw[:40]!r}: {what} ids are whole numbers")
    return int(raw)
