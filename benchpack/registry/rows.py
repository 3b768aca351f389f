"""Checking one run.jsonl row and flattening it into registry columns.

Rows from older implementations lack `cached_prompt`, `ttfb_s`, `ttft_any_s`,
`tpot_s`, `source` and `backend`; missing reads as null. What is present must
have the right type, because the registry's filters and medians trust it.
This is on the import hot path, so it reads dicts directly.
"""

from __future__ import annotations

from operator import attrgetter
from typing import Optional

import msgspec

from benchpack.results import contract
from benchpack.results.contract import TIMING_NUMBERS, TOKEN_COUNTS

# The registry's timing and token columns: the row contract's numeric fields (benchpack.results.contract).
TIMING = TIMING_NUMBERS
TOKENS = TOKEN_COUNTS
# Load-lane fields of a row (null when the run did not use them): filler tokens
# before the prompt, simultaneous requests, open-loop arrival rate (req/s).
LANE = ("depth_tokens", "concurrency", "arrival_rate")

# Column order of `normalize_row`'s tuple (the importer adds run_id, line, raw_json, fingerprint).
COLUMNS = (
    "pack_id", "pack_version", "case_id", "adapter", "model", "endpoint", "ok", "error",
    *TIMING,
    "prompt_tokens", "output_tokens", "cached_prompt_tokens", "token_source",
    "scoring_mode", "scoring_passed", "repo_task_status", "verify_exit_code", "repetition",
    *LANE,
)


class BadRow(Exception):
    def __init__(self, problems: list[tuple[str, str]]):
        super().__init__(problems)
        self.problems = problems


def _text(obj: dict, key: str, where: str, bad: list, required: bool):
    value = obj.get(key)
    if type(value) is str and value:
        return value
    if value is None and not required:
        return None
    bad.append((where, "must be a non-empty string" if required else "must be a string or null"))
    return None


def _section(row: dict, key: str, bad: list) -> dict:
    value = row.get(key)
    if value is None:
        return {}
    if type(value) is not dict:
        bad.append((key, "must be an object or null"))
        return {}
    return value


def _number(obj: dict, key: str, where: str, bad: list):
    value = obj.get(key)
    kind = type(value)
    if value is None or kind is float or kind is int:
        return value
    bad.append((where, "must be a number or null"))
    return None


def _integer(obj: dict, key: str, where: str, bad: list):
    value = obj.get(key)
    kind = type(value)
    if value is None or kind is int:
        return value
    if kind is float and value.is_integer():
        return int(value)
    bad.append((where, "must be an integer or null"))
    return None


def normalize_row(row: dict) -> tuple:
    """Registry columns for one row, in COLUMNS order; raises BadRow naming every bad field."""
    bad: list[tuple[str, str]] = []
    pack = row.get("pack")
    if type(pack) is dict:
        pack_id = _text(pack, "id", "pack.id", bad, True)
        pack_version = _text(pack, "version", "pack.version", bad, True)
    else:
        bad.append(("pack", "must be an object with id and version"))
        pack_id = pack_version = None
    case = _text(row, "case", "case", bad, True)
    adapter = _text(row, "adapter", "adapter", bad, True)
    model = _text(row, "model", "model", bad, True)
    endpoint = _text(row, "endpoint", "endpoint", bad, False)
    ok = row.get("ok")
    if type(ok) is not bool:
        bad.append(("ok", "must be true or false"))
    error = row.get("error")
    if error is not None and type(error) is not str:
        bad.append(("error", "must be a string"))
    timing = _section(row, "timing", bad)
    times = [_number(timing, name, "timing." + name, bad) for name in TIMING]
    tokens = _section(row, "tokens", bad)
    prompt = _integer(tokens, "prompt", "tokens.prompt", bad)
    output = _integer(tokens, "output", "tokens.output", bad)
    cached = _integer(tokens, "cached_prompt", "tokens.cached_prompt", bad)
    source = _text(tokens, "source", "tokens.source", bad, False)
    scoring = row.get("scoring")
    mode = passed = None
    if scoring is not None:
        if type(scoring) is dict:
            mode = _text(scoring, "mode", "scoring.mode", bad, True)
            passed = scoring.get("passed")
            if passed is not None and type(passed) is not bool:
                bad.append(("scoring.passed", "must be true, false or null"))
        else:
            bad.append(("scoring", "must be an object or null"))
    repo_task = _section(row, "repo_task", bad)
    status = _text(repo_task, "status", "repo_task.status", bad, False)
    exit_code = _integer(repo_task, "verify_exit_code", "repo_task.verify_exit_code", bad)
    repetition = _integer(row, "repetition", "repetition", bad)
    if repetition is not None and repetition < 1:
        bad.append(("repetition", "must be 1 or more"))
    depth = _integer(row, "depth_tokens", "depth_tokens", bad)
    concurrency = _integer(row, "concurrency", "concurrency", bad)
    arrival_rate = _number(row, "arrival_rate", "arrival_rate", bad)
    if bad:
        raise BadRow(bad)
    return (
        pack_id, pack_version, case, adapter, model, endpoint, int(ok), error,
        *times,
        prompt, output, cached, source,
        mode, None if passed is None else int(passed), status, exit_code, repetition,
        depth, concurrency, arrival_rate,
    )


# ---------------------------------------------------------------- fast path
# The row contract's own types (benchpack.results.contract), cut down to the
# registry's columns, so a valid row is parsed and checked in one C pass. A row
# the fast path refuses goes through json.loads + normalize_row, which either
# accepts it (e.g. a token count written as 3.0, NaN, a row of an older
# implementation) or names every bad field. The registry's keys must not be
# empty where the contract allows "": those rows take the slow path too.

# SQLite stores a bound NaN as NULL, and sqlite3 binds a float several times
# faster than None (None takes the adapter lookup). Absent fields decode
# straight to this constant, so the insert path pays nothing for them.
SQL_NULL = float("nan")


def _columns_of(struct: type, names: tuple[str, ...], nested: dict | None = None) -> type:
    """The contract's `struct` cut down to the fields the registry stores (`names`), with the contract's
    own types, so the fast path checks exactly what the contract does (benchpack.results.contract; no
    second row definition here). Absent optional fields decode to SQL_NULL, nested records to None;
    `nested` swaps a record's type for its own projection. The fields the registry does not keep are
    skipped by msgspec without being built."""
    nested = nested or {}
    fields = []
    for info in msgspec.structs.fields(struct):
        if info.name not in names:
            continue
        if info.name in nested:
            fields.append((info.name, Optional[nested[info.name]], None))
        elif info.required:
            fields.append((info.name, info.type))
        else:
            fields.append((info.name, info.type, SQL_NULL))
    return msgspec.defstruct(f"{struct.__name__}Columns", fields, kw_only=True, gc=False)


_Timing = _columns_of(contract.Timing, TIMING)
_TIMES_OF = attrgetter(*TIMING)
_Tokens = _columns_of(contract.Tokens, (*TOKENS, "source"))
_Scoring = _columns_of(contract.Scoring, ("mode", "passed"))
_RepoTask = _columns_of(contract.RepoTask, ("status", "verify_exit_code"))
_Row = _columns_of(contract.Row, ("pack", "case", "adapter", "model", "ok", "endpoint", "error", "timing",
                                  "tokens", "scoring", "repo_task", "repetition", *LANE),
                   nested={"timing": _Timing, "tokens": _Tokens, "scoring": _Scoring, "repo_task": _RepoTask})

_decode = msgspec.json.Decoder(_Row).decode
_NO_TIMING = _Timing()
_NO_TOKENS = _Tokens()
_NO_REPO_TASK = _RepoTask()
FastPathMiss = (msgspec.ValidationError, msgspec.DecodeError)


def decode_sql_row(text: str) -> tuple:
    """Registry columns of a valid row, nulls as None or SQL_NULL; raises FastPathMiss otherwise."""
    r = _decode(text)
    t = r.timing or _NO_TIMING
    k = r.tokens or _NO_TOKENS
    s = r.scoring
    rt = r.repo_task or _NO_REPO_TASK
    if not r.model or r.endpoint == "" or k.source == "" or (s is not None and not s.mode):
        raise msgspec.ValidationError("an empty string where the registry keeps a value")  # normalize_row names it
    if s is None:
        mode = passed = SQL_NULL
    else:
        mode, passed = s.mode, SQL_NULL if s.passed is None else int(s.passed)
    return (
        r.pack.id, r.pack.version, r.case, r.adapter, r.model, r.endpoint, int(r.ok), r.error,
        *_TIMES_OF(t),
        k.prompt, k.output, k.cached_prompt, k.source,
        mode, passed, rt.status, rt.verify_exit_code, r.repetition,
        r.depth_tokens, r.concurrency, r.arrival_rate,
    )


def decode_row(text: str) -> tuple:
    """`normalize_row(json.loads(text))` for a valid row; raises FastPathMiss otherwise."""
    return tuple(None if v is SQL_NULL else v for v in decode_sql_row(text))
