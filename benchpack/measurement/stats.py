"""Small summary statistics over result-row values that may be missing.

Result rows come from several implementations of the format, so any value may
be null, absent, a bool, or (from a hand-edited file) a non-finite float.
Only real finite numbers count; everything else is ignored rather than
guessed at.
"""

from __future__ import annotations

import functools
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


# --- noise bands (docs/compare-and-report.md, "Noise band") ----------------------

# A percentile bootstrap of the median: resample a case's values with
# replacement, take the median of each resample, and keep the central 95 % of
# those medians. Every resampling is seeded from a stable name (the run, case
# and metric), so the same rows always print the same band, and two runs are
# resampled independently. With n values the median of a resample can only
# take a few distinct values, so small n gives wide, honest bands (n = 3:
# close to min..max).
BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_LEVEL = 0.95
BOOTSTRAP_SEED = 20261201
# Below this many values per side a difference is never called outside the noise.
MIN_FOR_VERDICT = 3
# Percentiles are shown only when there are enough values for them to differ
# from the maximum: p90 from 10 values, p99 from 100.
PERCENTILE_MIN_N = {50: 1, 90: 10, 99: 100}


def _seed(name: str) -> int:
    import zlib

    return BOOTSTRAP_SEED ^ zlib.crc32(name.encode())


@functools.lru_cache(maxsize=64)
def _sorted_picks(n: int, seed: int):
    """BOOTSTRAP_RESAMPLES resamples of n positions, each resample sorted.

    Resampling positions of the *sorted* values is the same as resampling
    the values, and a sorted resample's median sits at fixed columns, so one
    sort serves every metric of a group (and the median is an index, not a
    sort per metric)."""
    import numpy as np

    picks = np.random.default_rng(seed).integers(0, n, size=(BOOTSTRAP_RESAMPLES, n))
    picks.sort(axis=1)
    picks.flags.writeable = False
    return picks


def bootstrap_medians(values: Iterable[Any], name: str = "") -> "numpy.ndarray | None":  # noqa: F821
    """BOOTSTRAP_RESAMPLES medians of resamples of the values; None below two values."""
    import numpy as np

    present = numbers(values)
    n = len(present)
    if n < 2:
        return None
    data = np.sort(np.asarray(present, dtype=float))
    picks = _sorted_picks(n, _seed(name))
    if n % 2:
        return data[picks[:, n // 2]]
    return (data[picks[:, n // 2 - 1]] + data[picks[:, n // 2]]) / 2


def central_interval(samples) -> tuple[float, float]:
    """The central BOOTSTRAP_LEVEL of the samples (nearest ranks)."""
    import numpy as np

    tail = (1 - BOOTSTRAP_LEVEL) / 2
    count = len(samples)
    low_rank, high_rank = int(tail * (count - 1)), int(math.ceil((1 - tail) * (count - 1)))
    part = np.partition(samples, (low_rank, high_rank))
    return float(part[low_rank]), float(part[high_rank])


def median_interval(values: Iterable[Any], name: str = "") -> tuple[float, float] | None:
    """95 % bootstrap interval of the median; None below two values."""
    medians = bootstrap_medians(values, name)
    return None if medians is None else central_interval(medians)


@dataclass(frozen=True)
class Difference:
    """`other` against `base`: the ratio of medians, its 95 % bootstrap interval, and the verdict."""

    ratio: float
    low: float | None
    high: float | None
    verdict: str  # "outside-noise" | "within-noise" | "too-few"

    def to_dict(self) -> dict:
        return {"ratio": self.ratio, "low": self.low, "high": self.high, "verdict": self.verdict}


def difference(base: Iterable[Any], other: Iterable[Any], *, base_medians=None, other_medians=None,
               names: tuple[str, str] = ("base", "other")) -> Difference | None:
    """Ratio of medians other/base with a bootstrap interval (both sides resampled independently).

    Outside the noise when the interval excludes 1; `too-few` when either
    side has fewer than MIN_FOR_VERDICT values (the ratio is still given).
    Callers that already resampled a side pass its medians.
    """
    a, b = numbers(base), numbers(other)
    if not a or not b:
        return None
    base_median = statistics.median(a)
    if base_median == 0:
        return None
    ratio = statistics.median(b) / base_median
    if len(a) < MIN_FOR_VERDICT or len(b) < MIN_FOR_VERDICT:
        return Difference(ratio, None, None, "too-few")
    base_medians = bootstrap_medians(a, names[0]) if base_medians is None else base_medians
    other_medians = bootstrap_medians(b, names[1]) if other_medians is None else other_medians
    valid = base_medians != 0
    low, high = central_interval(other_medians[valid] / base_medians[valid])
    verdict = "outside-noise" if low > 1 or high < 1 else "within-noise"
    return Difference(ratio, low, high, verdict)


def percentiles(values: Iterable[Any]) -> dict[str, float]:
    """p50/p90/p99 of the values, each only when there are enough values for it."""
    present = numbers(values)
    return {f"p{pct}": percentile(present, pct) for pct, needed in PERCENTILE_MIN_N.items()
            if len(present) >= needed}
