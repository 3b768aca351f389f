"""A pack's measurement lanes (`[lanes.*]` in benchpack.toml) and their checks.

A lane runs a pack's cases again under one more condition, and its rows say
which: the depth lane puts N tokens of filler context before the prompt
(`depth_tokens`), the concurrency lane keeps N requests in flight at once
(`concurrency`), the rate lane sends requests at Poisson-distributed times
at a mean rate (`arrival_rate`, requests/s). A row without these fields (or
with them null) belongs to no lane. `[lanes.slo]` is the latency target
goodput is measured against. docs/format.md describes the table;
docs/lanes.md what is measured and how accurately.
"""

from __future__ import annotations

import math
from typing import Any, Callable

# msgspec.Struct, not @dataclass: a dataclass compiles its generated methods from source text in every
# process (~0.4 ms a class); a Struct is built in C (docs/measurement.md, "Issue 34 item 2: stop 43").
import msgspec

from benchpack.packs.lane_filler import filler_sha256

LANE_NAMES = ("base", "depth", "concurrency", "rate")
MAX_DEPTH_TOKENS = 1_048_576
MAX_CONCURRENCY = 256
MAX_LANE_REQUESTS = 10_000
MAX_ARRIVAL_RATE = 1000.0


class DepthLane(msgspec.Struct, frozen=True):
    depths: tuple[int, ...]
    seed: int
    filler_sha256: str
    cases: tuple[str, ...]  # empty: every case the lane can run


class ConcurrencyLane(msgspec.Struct, frozen=True):
    levels: tuple[int, ...]
    requests: int  # per level
    cases: tuple[str, ...]


class RateLane(msgspec.Struct, frozen=True):
    rates: tuple[float, ...]  # mean arrivals per second
    requests: int  # per rate
    seed: int
    cases: tuple[str, ...]


class Slo(msgspec.Struct, frozen=True):
    ttft_s: float | None = None
    tpot_s: float | None = None


class Lanes(msgspec.Struct, frozen=True):
    depth: DepthLane | None = None
    concurrency: ConcurrencyLane | None = None
    rate: RateLane | None = None
    slo: Slo | None = None

    def declared(self) -> tuple[str, ...]:
        return tuple(name for name in LANE_NAMES[1:] if getattr(self, name) is not None)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


class _Parser:
    def __init__(self, problem: Callable[[str, str], None], case_ids: list[str], lane_case_ids: list[str]):
        self.problem = problem
        self.case_ids = case_ids
        self.lane_case_ids = lane_case_ids  # cases a lane may run (not repo tasks)

    def unknown_keys(self, table: dict, where: str, allowed: tuple[str, ...]) -> None:
        for key in table:
            if key not in allowed:
                self.problem(f"{where}.{key}", f"unknown key (allowed: {', '.join(allowed)})")

    def int_list(self, table: dict, key: str, where: str, minimum: int, maximum: int) -> tuple[int, ...]:
        value = table.get(key)
        field = f"{where}.{key}"
        if not isinstance(value, list) or not value:
            self.problem(field, "is required and must be a non-empty list of integers")
            return ()
        bad = [v for v in value if not _is_int(v) or not minimum <= v <= maximum]
        if bad:
            self.problem(field, f"every entry must be an integer from {minimum} to {maximum}, got {bad[0]!r}")
            return ()
        if len(set(value)) != len(value):
            self.problem(field, "has repeated entries")
            return ()
        return tuple(value)

    def count(self, table: dict, key: str, where: str, maximum: int, default: int | None = None) -> int:
        value = table.get(key, default)
        if not _is_int(value) or not 1 <= value <= maximum:
            self.problem(f"{where}.{key}", f"must be an integer from 1 to {maximum}, got {value!r}")
            return 1
        return value

    def seed(self, table: dict, where: str) -> int:
        value = table.get("seed", 0)
        if not _is_int(value) or value < 0:
            self.problem(f"{where}.seed", f"must be an integer >= 0, got {value!r}")
            return 0
        return value

    def cases(self, table: dict, where: str) -> tuple[str, ...]:
        value = table.get("cases", [])
        field = f"{where}.cases"
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            self.problem(field, "must be a list of case ids")
            return ()
        for case_id in value:
            if case_id not in self.case_ids:
                self.problem(field, f"no case {case_id!r} in this pack")
            elif case_id not in self.lane_case_ids:
                self.problem(field, f"case {case_id!r} is a repo task; lanes run chat and completion cases only")
        if not value and not self.lane_case_ids:
            self.problem(field, "the pack has no case a lane can run (repo tasks are not run in lanes)")
        return tuple(value)

    def depth(self, table: dict) -> DepthLane:
        where = "lanes.depth"
        self.unknown_keys(table, where, ("depths", "seed", "filler_sha256", "cases"))
        depths = self.int_list(table, "depths", where, 0, MAX_DEPTH_TOKENS)
        seed = self.seed(table, where)
        pinned = table.get("filler_sha256")
        if depths:
            expected = filler_sha256(seed, depths)
            if not isinstance(pinned, str):
                self.problem(f"{where}.filler_sha256",
                             f"is required: it pins the filler these depths and seed make; set it to {expected!r}")
            elif pinned != expected:
                self.problem(f"{where}.filler_sha256",
                             f"does not match the filler these depths and seed make ({expected}); a changed filler "
                             "is a new pack version")
        return DepthLane(depths, seed, pinned if isinstance(pinned, str) else "", self.cases(table, where))

    def concurrency(self, table: dict) -> ConcurrencyLane:
        where = "lanes.concurrency"
        self.unknown_keys(table, where, ("levels", "requests", "cases"))
        levels = self.int_list(table, "levels", where, 1, MAX_CONCURRENCY)
        requests = self.count(table, "requests", where, MAX_LANE_REQUESTS)
        if levels and requests < max(levels):
            self.problem(f"{where}.requests",
                         f"must be at least the highest level ({max(levels)}), or that level never has all its "
                         f"streams in flight; got {requests}")
        return ConcurrencyLane(levels, requests, self.cases(table, where))

    def rate(self, table: dict) -> RateLane:
        where = "lanes.rate"
        self.unknown_keys(table, where, ("rates", "requests", "seed", "cases"))
        value = table.get("rates")
        rates: tuple[float, ...] = ()
        if not isinstance(value, list) or not value:
            self.problem(f"{where}.rates", "is required and must be a non-empty list of requests per second")
        elif not all(_is_number(v) and 0 < v <= MAX_ARRIVAL_RATE for v in value):
            self.problem(f"{where}.rates", f"every entry must be a number > 0 and <= {MAX_ARRIVAL_RATE:g} (requests/s)")
        elif len(set(value)) != len(value):
            self.problem(f"{where}.rates", "has repeated entries")
        else:
            rates = tuple(float(v) for v in value)
        requests = self.count(table, "requests", where, MAX_LANE_REQUESTS)
        return RateLane(rates, requests, self.seed(table, where), self.cases(table, where))

    def slo(self, table: dict) -> Slo:
        where = "lanes.slo"
        self.unknown_keys(table, where, ("ttft_s", "tpot_s"))
        values = {}
        for key in ("ttft_s", "tpot_s"):
            if key in table:
                value = table[key]
                if not _is_number(value) or value <= 0:
                    self.problem(f"{where}.{key}", f"must be a number of seconds > 0, got {value!r}")
                else:
                    values[key] = float(value)
        if not table:
            self.problem(where, "must set ttft_s, tpot_s or both")
        return Slo(**values)


def parse_lanes(data: Any, problem: Callable[[str, str], None], case_ids: list[str],
                lane_case_ids: list[str], *, streamed: bool) -> Lanes:
    """The `[lanes]` table as Lanes; every problem goes to `problem(field, reason)`."""
    if data is None:
        return Lanes()
    if not isinstance(data, dict):
        problem("lanes", "must be a table")
        return Lanes()
    parser = _Parser(problem, case_ids, lane_case_ids)
    parser.unknown_keys(data, "lanes", ("depth", "concurrency", "rate", "slo"))
    parsed: dict[str, Any] = {}
    for name in ("depth", "concurrency", "rate", "slo"):
        if name not in data:
            continue
        if not isinstance(data[name], dict):
            problem(f"lanes.{name}", "must be a table")
            continue
        parsed[name] = getattr(parser, name)(data[name])
    lanes = Lanes(**parsed)
    if lanes.declared() and not streamed:
        problem("defaults.stream", "must be true when the pack declares lanes: TTFT and TPOT need a streamed reply")
    if lanes.slo is not None and not (lanes.concurrency or lanes.rate):
        problem("lanes.slo", "applies to the concurrency and rate lanes; declare one of them")
    return lanes


def lane_cases(declared: tuple[str, ...], lane_case_ids: list[str]) -> list[str]:
    """The case ids a lane runs: those it names, else every case a lane can run."""
    return list(declared) if declared else list(lane_case_ids)
