"""Per run/case medians, accumulated while rows stream past.

Medians are over successful rows only (a failed request has no meaningful
timing). Prompt/cache "coverage" is how many successful rows reported the
token count at all: a cache median over 1 of 5 rows is a caveat, not a fact.
A NaN counts as not reported, as it does in SQLite (which stores it as NULL).
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import median as _median

import numpy as np

# Index of each metric in the tuples passed to `add`.
METRICS = ("wall_s", "ttft_s", "prefill_tps", "decode_tps", "total_tps", "output_tokens",
           "prompt_tokens", "cached_prompt_tokens")


def median(values: list) -> float | None:
    return float(_median(values)) if values else None


def _medians(ok_metrics: list) -> tuple[dict, dict]:
    """Per metric: the median over reported values and how many were reported.

    `ok_metrics` holds one row's METRICS after another, flat. One numpy sort per group orders every column in C, with NaN (numpy
    reads None as NaN) sorted last; sorting in Python cost ~10 s per
    million rows and a numpy call per metric dominated small groups."""
    table = np.sort(np.array(ok_metrics, dtype=float).reshape(-1, len(METRICS)), axis=0)
    counts = np.count_nonzero(~np.isnan(table), axis=0).tolist()
    medians = {}
    for i, (name, count) in enumerate(zip(METRICS, counts)):
        if count:
            low, high = float(table[(count - 1) // 2, i]), float(table[count // 2, i])
            medians[name] = low if count % 2 else (low + high) / 2
        else:
            medians[name] = None
    return medians, dict(zip(METRICS, counts))


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
    """Keeps each ok row's metrics, flat; medians are taken once, in `build`."""

    def __init__(self) -> None:
        self._groups: dict[tuple, list] = {}

    def add(self, key: tuple, ok: bool, passed: int | None, metrics: tuple) -> None:
        group = self._groups.get(key)
        if group is None:
            group = self._groups[key] = [0, 0, 0, 0, []]
        group[0] += 1
        if passed is not None and passed == passed:  # NaN != NaN
            group[1] += 1
            group[2] += passed
        if ok:
            group[3] += 1
            group[4].extend(metrics)  # one flat list converts to numpy ~3x faster than a list of tuples

    def build(self) -> list[CaseStats]:
        out = []
        for key, (rows, scored, passed, ok_rows, ok_metrics) in self._groups.items():
            medians, counts = _medians(ok_metrics)
            out.append(CaseStats(
                key=key, row_count=rows, ok_count=ok_rows, scored_count=scored, passed_count=passed,
                medians=medians,
                prompt_token_rows=counts["prompt_tokens"],
                cached_prompt_rows=counts["cached_prompt_tokens"],
            ))
        return out
