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


def group_medians(owner: "np.ndarray", table: "np.ndarray", groups: int) -> tuple["np.ndarray", "np.ndarray"]:
    """Each group's FIGURES medians over its reported (non-NaN) values, NaN where none were reported,
    and how many were reported: two (groups, FIGURES) arrays.

    `owner` holds each ok row's group (0 <= g < groups) and `table` its METRICS, one row each; the
    rows of a group need not be adjacent. All groups are taken in a few numpy calls, however many
    there are: a registry of many small runs has ~50 cases of ~10 rows each per directory, where
    per-group (or per-directory) calls cost more than the rows themselves. Groups of similar size
    are laid side by side in one NaN-padded array and sorted in one call (NaN sorts last); very
    uneven ones would pad too much, so then each column is sorted by (group, value) instead."""
    width = len(METRICS)
    rows = len(owner)
    table = _figures(np.asarray(table, dtype=float).reshape(rows, width))
    size = np.bincount(owner, minlength=groups)
    longest = int(size.max()) if groups else 0
    if rows == 0:
        return np.full((groups, width), np.nan), np.zeros((groups, width), dtype=np.int64)
    order = np.argsort(owner, kind="stable")
    start = np.cumsum(size) - size
    if groups * longest <= 2 * rows + 64:
        # Each row's place within its group, given to the rows where they stand (any order within a group
        # will do, its values are sorted next): no copy of the whole table in group order.
        place = np.empty(rows, dtype=np.intp)
        place[order] = np.arange(rows) - np.repeat(start, size)
        padded = np.full((groups, width, longest), np.nan)  # a group's values of one figure contiguous: sorted in place
        padded[owner, :, place] = table
        padded.sort(axis=2)
        counts = np.count_nonzero(~np.isnan(padded), axis=2)
        low = np.take_along_axis(padded, ((counts - 1) // 2).clip(0)[:, :, None], axis=2)[:, :, 0]
        high = np.take_along_axis(padded, (counts // 2).clip(0, longest - 1)[:, :, None], axis=2)[:, :, 0]
    else:
        owner, table = owner[order], table[order]
        ordered = np.empty_like(table)
        for column in range(width):  # by group, then value: NaN last within each group
            ordered[:, column] = table[np.lexsort((table[:, column], owner)), column]
        counts = np.stack([np.bincount(owner, weights=~np.isnan(table[:, c]), minlength=groups)
                           for c in range(width)], axis=1).astype(np.int64)
        last = rows - 1
        low = np.take_along_axis(ordered, (start[:, None] + (counts - 1) // 2).clip(0, last), axis=0)
        high = np.take_along_axis(ordered, (start[:, None] + counts // 2).clip(0, last), axis=0)
    middle = np.where(counts % 2 == 1, low, (low + high) / 2)
    return np.where(counts > 0, middle, np.nan), counts


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
        flat = [group[4] for group in groups.values()]
        sizes = [len(metrics) // len(METRICS) for metrics in flat]
        owner = np.repeat(np.arange(len(flat)), sizes)
        # numpy reads None as NaN: not reported
        table = np.array(list(chain.from_iterable(flat)), dtype=float)
        medians, counts = group_medians(owner, table, len(flat))
        out = []
        for (key, (rows, scored, passed, ok_rows, _)), values, reported in zip(
                groups.items(), medians.tolist(), counts.tolist()):
            out.append(CaseStats(
                key=key, row_count=rows, ok_count=ok_rows, scored_count=scored, passed_count=passed,
                medians={name: value if count else None for name, value, count in zip(FIGURES, values, reported)},
                prompt_token_rows=reported[FIGURES.index("prompt_tokens")],
                cached_prompt_rows=reported[FIGURES.index("cached_prompt_tokens")],
            ))
        return out
