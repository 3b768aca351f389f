"""Case stats of many runs' rows, taken a batch at a time in a few numpy calls (issue 34).

The importer hands over each chunk of decoded rows with the case (group) of
each row; this keeps the columns the stats need as arrays and, at `flush`,
counts, medians (`casestats.group_medians`) and D-013 cache states come for
every group of the batch at once. A registry of many small runs (~50 cases of
~10 rows per directory) then pays no per-case or per-directory numpy or
Python work beyond one short tuple per case, where per-case grouping and a
median pass per directory cost about as much as the rows themselves.
"""

from __future__ import annotations

from itertools import chain
from operator import itemgetter

import numpy as np

from benchpack.registry.casestats import FIGURES, METRICS, group_medians
from benchpack.registry.rows import COLUMNS
from benchpack.results.cache_state import CACHED, COLD, COLD_MAX_CACHED_FRACTION, UNKNOWN

# Per row, one itemgetter and one fromiter: ok, scoring_passed, then METRICS (the stats' table columns).
_STATS_OF = itemgetter(COLUMNS.index("ok"), COLUMNS.index("scoring_passed"), *(COLUMNS.index(m) for m in METRICS))
_WIDTH = 2 + len(METRICS)
_PROMPT, _CACHED = METRICS.index("prompt_tokens"), METRICS.index("cached_prompt_tokens")
# The columns `flush` returns.
STATS = ("row_count", "ok_count", "scored_count", "passed_count", "prompt_token_rows", "cached_prompt_rows",
         "cache_state", *FIGURES)
_PROMPT_ROWS, _CACHED_ROWS = FIGURES.index("prompt_tokens"), FIGURES.index("cached_prompt_tokens")
_STATE_NAMES = (CACHED, COLD, UNKNOWN)


class CaseBatch:
    """Groups (one per run and case, numbered in the order they are opened) and their rows' columns."""

    def __init__(self) -> None:
        self.infos: list = []  # per group, what the caller wants back at flush
        # Each row's group and ok, scoring_passed (NaN: unscored), METRICS, in arrays kept from batch to batch
        # (grown, never shrunk): a flush then frees no per-chunk arrays held since the batch began.
        self._owner = np.empty(0, dtype=np.intp)
        self._table = np.empty((0, _WIDTH))
        self._clear()

    def _clear(self) -> None:
        self.infos = []
        # D-013 states the caller decided row by row, by group: only groups with such rows (rare) have an
        # entry (an empty set per group and its flags at flush measured ~0.9 µs a case, ~0.5% of a 10-row one).
        self._states: dict[int, set] = {}
        self.rows = 0

    def _room(self, rows: int) -> None:
        """Capacity for `rows` more rows, the rows so far kept."""
        needed = self.rows + rows
        if needed > len(self._owner):
            capacity = max(needed, 2 * len(self._owner))
            owner, table = np.empty(capacity, dtype=np.intp), np.empty((capacity, _WIDTH))
            owner[:self.rows], table[:self.rows] = self._owner[:self.rows], self._table[:self.rows]
            self._owner, self._table = owner, table

    def open_group(self, info) -> int:
        self.infos.append(info)
        return len(self.infos) - 1

    def add_chunk(self, owners: list[int], values: list[tuple]) -> "np.ndarray":
        """One chunk's rows (tuples that start with the decoded columns, in COLUMNS order) and their
        groups. Returns the chunk indexes of the ok rows whose token counts cannot decide their cache
        state (no server counts): the caller decides those from each row's prompt-cache record and
        passes the state to `add_state`.

        Per chunk this is one pass over the rows (an itemgetter each, into one fromiter) and a few numpy
        calls; the split into ok rows, their metrics and groups waits for `flush`, once per batch (a
        500-row run's chunk paid ~15 numpy calls and three passes, ~1/6 of a bare parse of its rows)."""
        rows = len(values)
        try:  # fromiter: half the time of np.array over a list of tuples
            table = np.fromiter(chain.from_iterable(map(_STATS_OF, values)), float, rows * _WIDTH)
        except TypeError:  # a None from a row the exact checks decoded: np.array reads it as NaN, like SQL_NULL
            table = np.array(list(map(_STATS_OF, values)), dtype=float)
        table = table.reshape(rows, _WIDTH)
        self._room(rows)
        start = self.rows
        self._owner[start:start + rows] = owners
        self._table[start:start + rows] = table
        self.rows += rows
        prompt, cached = table[:, 2 + _PROMPT], table[:, 2 + _CACHED]
        counted = (prompt > 0) & (cached >= 0)  # False for NaN: casestate.counted_state's test
        return np.flatnonzero((table[:, 0] == 1) & ~counted)

    def add_state(self, group: int, state: str) -> None:
        self._states.setdefault(group, set()).add(state)

    def flush(self) -> tuple[list, dict]:
        """(infos, columns) of the groups opened since the last flush, in order: their infos, and lists
        `row_count`, `ok_count`, `scored_count`, `passed_count`, `prompt_token_rows`,
        `cached_prompt_rows`, `cache_state` (casestate.combine over each group's ok rows) and one per
        FIGURES name (the median, NaN when none was reported). The batch is then empty."""
        groups, infos = len(self.infos), self.infos
        if not groups:
            return [], {name: [] for name in STATS}
        owner, table = self._owner[:self.rows], self._table[:self.rows]
        ok = table[:, 0] == 1
        passed = table[:, 1]
        ok_owner = owner[ok]
        metrics = table[ok, 2:]
        scored = ~np.isnan(passed)
        prompt, cached = metrics[:, _PROMPT], metrics[:, _CACHED]
        counted = (prompt > 0) & (cached >= 0)
        cold = counted & (cached <= COLD_MAX_CACHED_FRACTION * prompt)
        # the states decided row by row (add_state) are rare: flags per group, beside the counted ones
        told_cached, told_cold, told_unknown = np.zeros((3, groups), dtype=bool)
        for group, states in self._states.items():
            told_cached[group], told_cold[group], told_unknown[group] = (CACHED in states, COLD in states,
                                                                         UNKNOWN in states)
        any_cached = np.bincount(ok_owner[counted & ~cold], minlength=groups).astype(bool) | told_cached
        any_cold = np.bincount(ok_owner[cold], minlength=groups).astype(bool) | told_cold
        # each group's state as an index into _STATE_NAMES (numpy strings made a new str per group)
        state = np.where(any_cached, 0, np.where(any_cold & ~told_unknown, 1, 2))
        medians, counts = group_medians(ok_owner, metrics, groups)
        columns = {
            "row_count": np.bincount(owner, minlength=groups).tolist(),
            "ok_count": np.bincount(ok_owner, minlength=groups).tolist(),
            "scored_count": np.bincount(owner[scored], minlength=groups).tolist(),
            "passed_count": np.bincount(owner[scored], weights=passed[scored], minlength=groups)
            .astype(np.int64).tolist(),
            "prompt_token_rows": counts[:, _PROMPT_ROWS].tolist(),
            "cached_prompt_rows": counts[:, _CACHED_ROWS].tolist(),
            "cache_state": list(map(_STATE_NAMES.__getitem__, state.tolist())),
            **dict(zip(FIGURES, medians.T.tolist())),
        }
        self._clear()
        return infos, columns
