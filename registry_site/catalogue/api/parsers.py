"""Request-body parsers that answer 400, never 500, for any JSON body.

DRF's JSONParser turns a ValueError into a 400 but lets RecursionError through:
a 3 KB body of 1,500 nested brackets was a 500 from any token holder. The
body's nesting is bounded before it is decoded, so no body reaches Python's
recursive decoder deeper than any API payload needs.
"""

from __future__ import annotations

import io

from rest_framework import parsers
from rest_framework.exceptions import ParseError

MAX_JSON_DEPTH = 64  # the deepest API body (a run request's options) is 3 levels


def json_depth(text: str, limit: int) -> int:
    """The deepest bracket nesting of `text` outside strings, counting no further than `limit` + 1."""
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > limit:
                    break
        elif char in "]}":
            depth -= 1
    return deepest


class JSONParser(parsers.JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        parser_context = parser_context or {}
        encoding = parser_context.get("encoding", "utf-8")
        raw = stream.read() if stream is not None else b""
        try:
            text = raw.decode(encoding)
        except (UnicodeDecodeError, LookupError) as exc:
            raise ParseError(f"JSON parse error - the body is not {encoding} text") from exc
        if json_depth(text, MAX_JSON_DEPTH) > MAX_JSON_DEPTH:
            raise ParseError(f"JSON parse error - nested more than {MAX_JSON_DEPTH} levels deep")
        return super().parse(io.BytesIO(raw), media_type, parser_context)
