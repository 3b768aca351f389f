"""Did a second run reproduce the first? Per case, numbers within a tolerance.

Pure functions over two result directories of the same pack (the caller has
already checked that their reproduction keys match). For every case of the
original:

* prefill parity (D-013) must be `comparable`: the same prompt-token and
  cached-prompt-token medians, otherwise speeds are not comparable at all;
* each timing metric (decode_rate = 1/tpot_s, ttft_s; benchpack.results.metrics)
  matches when the medians differ by
  at most max(5 %, the original's spread, the reproduction's spread), where a
  run's spread for a case is (max - min) / median over its ok rows: a case
  that moved that much between repetitions of one run cannot be held to less
  in another run. TTFT also gets an absolute floor of 10 ms: below ~200 ms,
  5 % is less than the scheduling jitter of a busy client machine, and a
  difference that small says nothing about the system under test;
* the pass rate (scored rows that passed) matches within
  max(5 %, one repetition's worth), i.e. 1 / the smaller number of scored rows.

A metric missing on both sides is not compared; missing on one side is a
miss. Rows written before TPOT existed (the seed's) have no decode_rate on
either side: only then is the legacy `decode_tps` (output ÷ (wall − TTFT))
compared, under its own name, so a verdict never mixes the two figures. The verdict is `reproduced` when every case matches, `not-reproduced`
when a comparable case misses, `not-comparable` when a case cannot be
compared (missing, no ok rows, prefill parity other than comparable).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from benchpack.reporting.compare import compare_runs
from benchpack.lanes.aggregate import group_label
from benchpack.results.resultdir import ResultDir
from benchpack.results.resultdir import field as row_field
from benchpack.measurement.stats import is_number, median
from benchpack.results.metrics import decode_rate_of


def _at(path: str):
    return lambda row: row_field(row, path)


# name -> the row's value. decode_tps is the fallback for rows without TPOT (see above).
METRICS = {"decode_rate": decode_rate_of, "ttft_s": _at("timing.ttft_s")}
LEGACY_DECODE = ("decode_tps", _at("timing.decode_tps"))
REPRODUCED = "reproduced"
NOT_REPRODUCED = "not-reproduced"
NOT_COMPARABLE = "not-comparable"


@dataclass(frozen=True)
class Tolerance:
    relative: float = 0.05  # medians may differ by this share of the original's at least
    pass_rate: float = 0.05
    ttft_floor_s: float = 0.010  # and TTFT by at least this much

    def describe(self) -> str:
        return (f"timing medians within max({self.relative:.0%}, either run's own (max-min)/median spread), "
                f"TTFT within at least {self.ttft_floor_s * 1000:g} ms; "
                f"pass rate within max({self.pass_rate:.0%}, one repetition); prefill figures comparable (same prompt, same cache state)")


@dataclass
class MetricCheck:
    metric: str
    original: float | None
    reproduction: float | None
    difference: float | None  # relative to the original
    allowed: float | None
    ok: bool


@dataclass
class CaseVerdict:
    case: str
    verdict: str
    reasons: list[str] = field(default_factory=list)
    checks: list[MetricCheck] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


def spread(values) -> float:
    present = [v for v in values if is_number(v)]
    middle = median(present)
    if not present or not middle:
        return 0.0
    return (max(present) - min(present)) / abs(middle)


def _ok_rows(result: ResultDir, case: str) -> list[dict]:
    """`case` is compare's group: the case id, plus its lane level for a lane row (`short @depth=4096`)."""
    return [r for r in result.rows if group_label(r) == case and r.get("ok") is True]


def _pass_rate(rows: list[dict]) -> tuple[float | None, int]:
    verdicts = [row_field(r, "scoring.passed") for r in rows]
    verdicts = [v for v in verdicts if isinstance(v, bool)]
    return (sum(verdicts) / len(verdicts), len(verdicts)) if verdicts else (None, 0)


def _timing_check(metric: str, value, mine: list[dict], theirs: list[dict], tolerance: Tolerance) -> MetricCheck | None:
    if metric == "decode_rate" and all(value(r) is None for r in (*mine, *theirs)):
        metric, value = LEGACY_DECODE  # the seed's rows: no TPOT on either side
    a, b = median(value(r) for r in mine), median(value(r) for r in theirs)
    if a is None and b is None:
        return None
    if a is None or b is None or a == 0:
        return MetricCheck(metric, a, b, None, None, False)
    floor = tolerance.ttft_floor_s / abs(a) if metric == "ttft_s" else 0.0
    allowed = max(tolerance.relative, floor, spread(value(r) for r in mine), spread(value(r) for r in theirs))
    difference = abs(b - a) / abs(a)
    return MetricCheck(metric, a, b, round(difference, 4), round(allowed, 4), difference <= allowed)


def _pass_check(mine: list[dict], theirs: list[dict], tolerance: Tolerance) -> MetricCheck | None:
    (a, n_a), (b, n_b) = _pass_rate(mine), _pass_rate(theirs)
    if a is None and b is None:
        return None
    if a is None or b is None:
        return MetricCheck("pass_rate", a, b, None, None, False)
    allowed = max(tolerance.pass_rate, 1 / min(n_a, n_b))
    difference = abs(b - a)
    return MetricCheck("pass_rate", a, b, round(difference, 4), round(allowed, 4), difference <= allowed + 1e-9)


def compare_cases(original: ResultDir, reproduction: ResultDir, tolerance: Tolerance = Tolerance()) -> list[CaseVerdict]:
    comparison = compare_runs([original, reproduction])
    verdicts = []
    for case in comparison.cases:
        if not any(group_label(r) == case.case for r in original.rows):
            continue  # the reproduction's extra cases say nothing about the original
        mine, theirs = _ok_rows(original, case.case), _ok_rows(reproduction, case.case)
        if not mine or not theirs:
            verdicts.append(CaseVerdict(case.case, NOT_COMPARABLE, [f"no ok rows in the {'original' if not mine else 'reproduction'}"]))
            continue
        if case.parity != "comparable":
            verdicts.append(CaseVerdict(case.case, NOT_COMPARABLE, [f"prefill parity {case.parity}: the prompts or their cache state differ"]))
            continue
        checks = [c for c in (*(_timing_check(m, p, mine, theirs, tolerance) for m, p in METRICS.items()),
                              _pass_check(mine, theirs, tolerance)) if c is not None]
        missed = [c for c in checks if not c.ok]
        reasons = [f"{c.metric}: {c.original} vs {c.reproduction}" + (
            f" differs by {c.difference:.1%}, allowed {c.allowed:.1%}" if c.difference is not None else " (missing)")
            for c in missed]
        verdicts.append(CaseVerdict(case.case, NOT_REPRODUCED if missed else REPRODUCED, reasons, checks))
    return verdicts


def overall(verdicts: list[CaseVerdict]) -> str:
    if not verdicts or any(v.verdict == NOT_COMPARABLE for v in verdicts):
        return NOT_COMPARABLE
    return REPRODUCED if all(v.verdict == REPRODUCED for v in verdicts) else NOT_REPRODUCED
