"""Small summary statistics over result-row values that may be missing.

Result rows come from several implementations of the format, so any value may
be null, absent, a bool, or (from a hand-edited file) a non-finite float.
Only real finite numbers count; everything else is ignored rather than
guessed at.
"""

from __future__ import annotations

import math
import statistics
import sys
from dataclasses import dataclass
from typing import Any, Iterable


def is_number(value: Any) -> bool:
    # bool is an int subclass; `true` is never a token count or a timing.
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    if isinstance(value, int):
        # An int past a double's range cannot be plotted or averaged as a float
        # (math.isfinite would raise OverflowError on it).
        return -sys.float_info.max <= value <= sys.float_info.max
    return math.isfinite(value)


def numbers(values: Iterable[Any]) -> list[float | int]:
    return [v for v in values if is_number(v)]


def median(values: Iterable[Any]) -> float | int | None:
    present = numbers(values)
    return statistics.median(present) if present else None


@dataclass(frozen=True)
class Spread:
    """How much repetitions of one case moved: the shape a reader checks before trusting a median."""

    count: int
    min: float | int
    median: float | int
    max: float | int
    p90: float | int

    def to_dict(self) -> dict:
        return {"count": self.count, "min": self.min, "median": self.median, "max": self.max, "p90": self.p90}


def spread(values: Iterable[Any]) -> Spread | None:
    present = numbers(values)
    if not present:
        return None
    return Spread(
        count=len(present),
        min=min(present),
        median=statistics.median(present),
        max=max(present),
        p90=percentile(present, 90),
    )


def percentile(values: Iterable[Any], pct: float) -> float | int | None:
    """Linear interpolation between closest ranks (numpy's default), so p50 == median."""
    present = sorted(numbers(values))
    if not present:
        return None
    rank = (len(present) - 1) * min(max(pct, 0), 100) / 100
    low = math.floor(rank)
    high = min(low + 1, len(present) - 1)
    return present[low] + (present[high] - present[low]) * (rank - low)
