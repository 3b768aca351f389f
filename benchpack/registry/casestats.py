"""Per run/case medians, accumulated while rows stream past.

Medians are over successful rows only (a failed request has no meaningful
timing). Prompt/cache "coverage" is how many successful rows reported the
token count at all: a cache median over 1 of 5 rows is a caveat, not a fact.
A NaN counts as not reported, as it does in SQLite (which stores it as NULL).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from itertools import filterfalse
from math import isnan
from operator import is_not
from statistics import median as _median

# Index of each metric in the tuples passed to `add`.
METRICS = ("wall_s", "ttft_s", "prefill_tps", "decode_tps", "total_tps", "output_tokens",
           "prompt_tokens", "cached_prompt_tokens")


_is_not_none = partial(is_not, None)


def median(values: list) -> float | None:
    return float(_median(values)) if values else None


def _reported(column) -> list:
    """The values that are neither None nor NaN, filtered in C (this runs over every ok row)."""
    return list(filterfalse(isnan, filter(_is_not_none, column)))


@dataclass(frozen=True)
class CaseStats:
    key: tuple  # (pack_id, pack_version, case_id, adapter, model)
    row_count: int
    ok_count: int
    scored_count: int
    passed_count: int
    medians: dict  # metric -> median or None
    prompt_token_rows: int
    cached_prompt_rows: int


class CaseStatsBuilder:
    """Keeps each ok row's metric tuple; medians are taken once, in `build`."""

    def __init__(self) -> None:
        self._groups: dict[tuple, list] = {}

    def add(self, key: tuple, ok: bool, passed: int | None, metrics: tuple) -> None:
        group = self._groups.get(key)
        if group is None:
            group = self._groups[key] = [0, 0, 0, []]
        group[0] += 1
        if passed is not None and passed == passed:  # NaN != NaN
            group[1] += 1
            group[2] += passed
        if ok:
            group[3].append(metrics)

    def build(self) -> list[CaseStats]:
        out = []
        for key, (rows, scored, passed, ok_metrics) in self._groups.items():
            columns = zip(*ok_metrics) if ok_metrics else [()] * len(METRICS)
            series = {name: _reported(column) for name, column in zip(METRICS, columns)}
            out.append(CaseStats(
                key=key, row_count=rows, ok_count=len(ok_metrics), scored_count=scored, passed_count=passed,
                medians={name: median(values) for name, values in series.items()},
                prompt_token_rows=len(series["prompt_tokens"]),
                cached_prompt_rows=len(series["cached_prompt_tokens"]),
            ))
        return out
