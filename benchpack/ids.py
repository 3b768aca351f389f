"""The one grammar of every identifier the registry stores and routes (docs/format.md, "Identifiers").

A value outside its grammar is refused where it enters: pack loading (pack and
case ids), bundle validation (the ids in every row, the runtime name in
run-metadata.json) and so the registry, which validates every upload with the
same checks. The registry's URL converters (registry_site/converters.py) are
built from the same patterns, so every stored id has an address: nothing is
stored that cannot be served (a case id with `/` once made every leaderboard
page a 500).

| kind            | pattern                                                    | e.g.                             |
|-----------------|------------------------------------------------------------|----------------------------------|
| pack id         | letter/digit, then letters, digits, `_`, `-`; <= 128 chars | `smoke-chat`, `merge_intervals2` |
| case id         | as a pack id, <= 100 chars (room for a lane level)         | `short`, `fix-repo`              |
| board key       | a case id, optionally ` @depth=N`, ` @concurrency=N`, ` @rate=R/s` | `short @rate=2.5/s`      |
| model id        | `/`-separated segments of letters, digits and `._:@+=-`, each starting with a letter, digit or `_`; <= 255 | `qwen2.5-coder:7b`, `mlx-community/Qwen2.5-0.5B-Instruct-4bit` |
| runtime name    | letter/digit, then letters, digits, space and `._+()-`, not ending in a space; <= 128 | `llama.cpp`, `LM Studio` |
| hardware class  | as a runtime name, <= 255 (the registry derives it: `apple-m5-max-64gb`) | |

Model ids keep `/` because hub ids have one (`org/name`); their URLs use a
converter that matches `/` (like Django's `path`), and no other route
follows a model id. Pack and case ids are single URL segments.
"""

from __future__ import annotations

import re

MAX_ID_CHARS = 128
# A case's board key is the case id plus its lane level (" @concurrency=256", " @rate=0.25/s": at most 25
# characters); both fit the registry's 128-character case column only if case ids stop at 100.
MAX_CASE_ID_CHARS = 100
MAX_BOARD_KEY_CHARS = 128
MAX_MODEL_CHARS = 255
MAX_RUNTIME_CHARS = 128
MAX_HARDWARE_CHARS = 255

# Patterns without anchors, so URL converters can embed them; `fullmatch` anchors them here.
ID_PATTERN = r"[A-Za-z0-9][A-Za-z0-9_-]{0,127}"
CASE_ID_PATTERN = r"[A-Za-z0-9][A-Za-z0-9_-]{0,99}"
LANE_SUFFIX_PATTERN = r" @(?:depth|concurrency)=[0-9]{1,9}| @rate=[0-9][0-9.e+-]{0,15}/s"
BOARD_KEY_PATTERN = rf"{CASE_ID_PATTERN}(?:{LANE_SUFFIX_PATTERN})?"
_MODEL_SEGMENT = r"[A-Za-z0-9_][A-Za-z0-9._:@+=-]*"
MODEL_PATTERN = rf"{_MODEL_SEGMENT}(?:/{_MODEL_SEGMENT})*"
NAME_PATTERN = r"[A-Za-z0-9](?:[A-Za-z0-9 ._+()-]*[A-Za-z0-9._+()-])?"

ID_RE = re.compile(ID_PATTERN)
CASE_ID_RE = re.compile(CASE_ID_PATTERN)
BOARD_KEY_RE = re.compile(BOARD_KEY_PATTERN)
MODEL_RE = re.compile(MODEL_PATTERN)
NAME_RE = re.compile(NAME_PATTERN)

# kind -> (compiled pattern, most characters, the rule in words for error messages)
GRAMMARS: dict[str, tuple[re.Pattern, int, str]] = {
    "pack id": (ID_RE, MAX_ID_CHARS, "a letter or digit, then letters, digits, '_' or '-'"),
    "case id": (CASE_ID_RE, MAX_CASE_ID_CHARS, "a letter or digit, then letters, digits, '_' or '-' (no '/', '.' or spaces)"),
    "board key": (BOARD_KEY_RE, MAX_BOARD_KEY_CHARS, "a case id, optionally with a lane level"),
    "model id": (MODEL_RE, MAX_MODEL_CHARS,
                 "'/'-separated parts of letters, digits and '._:@+=-', each starting with a letter, digit or '_'"),
    "runtime name": (NAME_RE, MAX_RUNTIME_CHARS,
                     "a letter or digit, then letters, digits, spaces or '._+()-', not ending in a space"),
    "hardware class": (NAME_RE, MAX_HARDWARE_CHARS,
                       "a letter or digit, then letters, digits, spaces or '._+()-', not ending in a space"),
}


def problem(kind: str, value: object) -> str | None:
    """Why `value` is not a valid `kind` (a key of GRAMMARS), or None when it is. Never echoes the value:
    bundle checks may not repeat row content (it could be a secret)."""
    pattern, most, rule = GRAMMARS[kind]
    if not isinstance(value, str):
        return f"a {kind} must be a string"
    if not value:
        return f"a {kind} must not be empty"
    if len(value) > most:
        return f"a {kind} has at most {most} characters, not {len(value)}"
    if not pattern.fullmatch(value):
        slash = " ('/' is not allowed)" if "/" in value and kind in ("pack id", "case id") else ""
        return f"not a valid {kind}{slash}: {rule}"
    return None


def is_valid(kind: str, value: object) -> bool:
    return problem(kind, value) is None
