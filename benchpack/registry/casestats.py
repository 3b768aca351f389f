"""Per run/case medians, accumulated while rows stream past.

Medians are over successful rows only (a failed request has no meaningful
timing). Prompt/cache "coverage" is how many successful rows reported the
token count at all: a cache median over 1 of 5 rows is a caveat, not a fact.
A NaN counts as not reported, as it does in SQLite (which stores it as NULL).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain
from statistics import median as _median

import numpy as np

# Index of each metric in the tuples passed to `add`: registry columns, tpot_s last.
METRICS = ("wall_s", "ttft_s", "prefill_tps", "decode_tps", "total_tps", "output_tokens",
           "prompt_tokens", "cached_prompt_tokens", "tpot_s")
# What the medians are of: the same, except that the last column is each row's decode figure,
# 1/tpot_s (benchpack.results.metrics), so a case's decode is the median of its rows' rates.
FIGURES = METRICS[:-1] + ("decode_rate",)


def _figures(table: "np.ndarray") -> "np.ndarray":
    """Rows of METRICS -> rows of FIGURES in place: tpot_s becomes 1/tpot_s (NaN unless tpot_s > 0)."""
    tpot = table[..., -1]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        rate = 1.0 / tpot
        table[..., -1] = np.where((tpot > 0) & np.isfinite(rate), rate, np.nan)
    return table


def median(values: list) -> float | None:
    return float(_median(values)) if values else None


def _medians(ok_metrics: list) -> tuple[dict, dict]:
    """Per metric: the median over reported values and how many were reported.

    `ok_metrics` holds one row's METRICS after another, flat. One numpy sort per group orders every column in C, with NaN (numpy
    reads None as NaN) sorted last; sorting in Python cost ~10 s per
    million rows and a numpy call per metric dominated small groups."""
    table = np.sort(_figures(np.array(ok_metrics, dtype=float).reshape(-1, len(METRICS))), axis=0)
    counts = np.count_nonzero(~np.isnan(table), axis=0).tolist()
    medians = {}
    for i, (name, count) in enumerate(zip(FIGURES, counts)):
        if count:
            low, high = float(table[(count - 1) // 2, i]), float(table[count // 2, i])
            medians[name] = low if count % 2 else (low + high) / 2
        else:
            medians[name] = None
    return medians, dict(zip(FIGURES, counts))


def medians_of_groups(groups: list[list]) -> list[tuple[dict, dict]]:
    """`_medians` of every group, in one set of numpy calls when the groups are of similar size.

    A real run has tens of cases with a few repetitions each, where a numpy
    sort per group costs ~10 µs, more than the rows themselves. The groups
    are laid side by side in one NaN-padded array, sorted in one call
    (NaN sorts last) and their medians read by index. Very uneven groups
    would pad too much, so those are sorted one by one instead."""
    width = len(METRICS)
    sizes = [len(group) // width for group in groups]
    rows, longest = sum(sizes), max(sizes, default=0)
    if rows == 0 or len(groups) == 1 or len(groups) * longest > 2 * rows + 64:
        return [_medians(group) for group in groups]
    size = np.array(sizes)
    owner = np.repeat(np.arange(len(groups)), size)
    position = np.arange(rows) - (np.cumsum(size) - size)[owner]
    padded = np.full((len(groups), longest, width), np.nan)
    padded[owner, position] = _figures(np.array(list(chain.from_iterable(groups)), dtype=float).reshape(rows, width))
    padded.sort(axis=1)
    counts = np.count_nonzero(~np.isnan(padded), axis=1)
    low = np.take_along_axis(padded, ((counts - 1) // 2).clip(0)[:, None, :], axis=1)[:, 0, :]
    high = np.take_along_axis(padded, (counts // 2).clip(0, longest - 1)[:, None, :], axis=1)[:, 0, :]
    middle = np.where(counts % 2 == 1, low, (low + high) / 2)
    out = []
    for values, reported in zip(middle.tolist(), counts.tolist()):
        medians = {name: value if count else None for name, value, count in zip(FIGURES, values, reported)}
        out.append((medians, dict(zip(FIGURES, reported))))
    return out


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

    def add_group(self, key: tuple, rows: int, passed: list, ok_metrics) -> None:
        """Several rows of one key at once: `rows` rows, the `passed` values of the scored ones (0/1), and
        the ok rows' metrics as one flat iterable — what `add` does row by row, in a few C calls."""
        group = self._groups.get(key)
        if group is None:
            group = self._groups[key] = [0, 0, 0, 0, []]
        metrics = group[4]
        before = len(metrics)
        metrics.extend(ok_metrics)
        group[0] += rows
        group[1] += len(passed)
        group[2] += sum(passed)
        group[3] += (len(metrics) - before) // len(METRICS)

    def build(self) -> list[CaseStats]:
        groups = self._groups
        all_medians = medians_of_groups([group[4] for group in groups.values()])
        out = []
        for (key, (rows, scored, passed, ok_rows, _)), (medians, counts) in zip(groups.items(), all_medians):
            out.append(CaseStats(
                key=key, row_count=rows, ok_count=ok_rows, scored_count=scored, passed_count=passed,
                medians=medians,
                prompt_token_rows=counts["prompt_tokens"],
                cached_prompt_rows=counts["cached_prompt_tokens"],
            ))
        return out
