"""Small summary statistics over result-row values that may be missing.

Result rows come from several implementations of the format, so any value may
be null, absent, a bool, or (from a hand-edited file) a non-finite float.
Only real finite numbers count; everything else is ignored rather than
guessed at.
"""

from __future__ import annotations

import functools
import math
import sys
from typing import Any, Iterable

# msgspec.Struct, not @dataclass: a dataclass compiles its generated methods from source text in every
# process (~0.4 ms a class); a Struct is built in C (docs/measurement.md, "Issue 34 item 2: stop 43").
import msgspec


_FLOAT_MAX = sys.float_info.max
_isfinite = math.isfinite


def is_number(value: Any) -> bool:
    # The exact types first: a summary calls this for every field of every row (about 11,000 calls for
    # 192 rows), and the two type checks are most of a call's cost; subclasses take the general path.
    kind = type(value)
    if kind is float:
        return _isfinite(value)
    if kind is int:
        return -_FLOAT_MAX <= value <= _FLOAT_MAX
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


def sorted_numbers(values: Iterable[Any]) -> list[float | int]:
    """numbers(values), sorted: median and percentiles of it give what they give of the values
    (sorting a sorted list again is one linear pass)."""
    return sorted(numbers(values))


def _median_of_sorted(ordered: list) -> float | int:
    """statistics.median's value, given the values sorted (the same arithmetic: the middle one, or the
    mean of the middle two). Not statistics itself: importing it (fractions, decimal) cost `benchpack run`
    more CPU than every median of its summary."""
    n = len(ordered)
    if n % 2 == 1:
        return ordered[n // 2]
    i = n // 2
    return (ordered[i - 1] + ordered[i]) / 2


def median(values: Iterable[Any]) -> float | int | None:
    present = numbers(values)
    return _median_of_sorted(sorted(present)) if present else None


class Spread(msgspec.Struct, frozen=True):
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
        median=_median_of_sorted(sorted(present)),
        max=max(present),
        p90=percentile(present, 90),
    )


def percentile(values: Iterable[Any], pct: float) -> float | int | None:
    """Linear interpolation between closest ranks (numpy's default), so p50 == median."""
    present = sorted(numbers(values))
    if not present:
        return None
    return _percentile_of_sorted(present, pct)


def _percentile_of_sorted(present: list, pct: float) -> float | int:
    rank = (len(present) - 1) * min(max(pct, 0), 100) / 100
    low = math.floor(rank)
    high = min(low + 1, len(present) - 1)
    return present[low] + (present[high] - present[low]) * (rank - low)


# --- noise bands (docs/compare-and-report.md, "Noise band") ----------------------

# A percentile bootstrap of the median: resample a case's values with
# replacement, take the median of each resample, and keep the central 95 % of
# those medians. Every resampling is seeded from a stable name (the run and
# case; its metrics share the resampled positions), so the same rows always
# print the same band, and two runs are resampled independently. With n values the median of a resample can only
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

# How the resampling is done without drawing n values per resample (pure Python,
# no numpy: importing numpy cost more CPU than the rest of a short `benchpack run`).
# A resample's median needs only the positions, in the sorted values, of the
# resample's middle one or two order statistics. With n picks uniform on
# {0..n-1}, the k-th smallest is <= i exactly when at least k picks are <= i:
#     P(X_(k) <= i) = P(Binomial(n, (i+1)/n) >= k),
# so X_(k) is drawn by inverting that distribution (one uniform and a bisection;
# the table depends on n only and is cached). For even n the next one, X_(k+1),
# given X_(k) = i: it equals i with probability 1 - B(i)/P(X_(k) = i), where
#     B(i) = P(X_(k) = i < X_(k+1)) = C(n,k) ((i+1)^k - i^k)/n^k ((n-1-i)/n)^(n-k)
# (k picks at or below i, at least one at i; the other n-k above i); otherwise
# the n-k picks above i are uniform on {i+1..n-1} and X_(k+1) is their minimum:
#     P(X_(k+1) > j | above i) = ((n-1-j)/(n-1-i))^(n-k).
# The pairs and their probabilities make one table per n, drawn from by one
# uniform and a bisection per resample instead of n draws and a sort. That is
# exactly the distribution of resampling the values (tests/measurement/
# test_measurement_bootstrap.py holds it against brute-force resampling).

# A probability below this share of a sum of at most 1 does not change a double of it.
_NEGLIGIBLE = 1e-17


def _seed(name: str) -> int:
    import zlib

    return BOOTSTRAP_SEED ^ zlib.crc32(name.encode())


def _log_choose(n: int, k: int) -> float:
    return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)


def _binomial_at_least(n: int, k: int, p: float, log_choose: float) -> float:
    """P(Binomial(n, p) >= k), summed from k away from the mode until the terms stop mattering.

    `log_choose` is log C(n, k), the same for every p of a table."""
    if k <= 0 or p >= 1:
        return 1.0
    if k > n or p <= 0:
        return 0.0
    odds = p / (1 - p)
    term = math.exp(log_choose + k * math.log(p) + (n - k) * math.log1p(-p))  # P(= k)
    if k > (n + 1) * p:  # k above the mode: the terms fall from k upwards
        total, m = 0.0, k
        while True:
            total += term
            if m == n or term <= total * _NEGLIGIBLE:
                return min(total, 1.0)
            term *= (n - m) / (m + 1) * odds
            m += 1
    # k at or below the mode: the terms below k fall from k-1 downwards; 1 - that sum
    below, m = 0.0, k
    while m > 0:
        term *= m / (n - m + 1) / odds  # P(= m) -> P(= m-1)
        m -= 1
        below += term
        if term <= below * _NEGLIGIBLE:
            break
    return max(1.0 - below, 0.0)


@functools.lru_cache(maxsize=32)
def _order_statistic_cdf(n: int, k: int) -> tuple[float, ...]:
    """P(X_(k) <= i) for i in 0..n-1: the k-th smallest (1-based) of n picks uniform on {0..n-1}."""
    cdf, running, log_choose = [], 0.0, _log_choose(n, k)
    for i in range(n - 1):
        # Monotone by construction; rounding in the two tail forms must not break the bisection.
        running = max(running, _binomial_at_least(n, k, (i + 1) / n, log_choose))
        if running >= 1.0:
            break  # every later position is 1.0 too: a large n's upper tail costs nothing
        cdf.append(running)
    cdf.extend([1.0] * (n - len(cdf)))
    return tuple(cdf)


@functools.lru_cache(maxsize=32)
def _stays_at(n: int, k: int) -> tuple[float, ...]:
    """P(X_(k+1) = i | X_(k) = i) for i in 0..n-1 (even n: both middle picks at the same position)."""
    cdf = _order_statistic_cdf(n, k)
    log_choose = _log_choose(n, k)
    stays = []
    for i in range(n):
        at_i = cdf[i] - (cdf[i - 1] if i else 0.0)
        if i == n - 1 or at_i <= 0:
            stays.append(1.0)  # nothing above the last position; an impossible i is never drawn
            continue
        # B(i) in logs: C(n,k) is huge and the powers tiny for large n.
        split = math.exp(log_choose + k * math.log((i + 1) / n) + math.log1p(-((i / (i + 1)) ** k))
                         + (n - k) * math.log((n - 1 - i) / n))
        stays.append(min(max(1.0 - split / at_i, 0.0), 1.0))
    return tuple(stays)


@functools.lru_cache(maxsize=32)
def _position_table(n: int) -> tuple[tuple[float, ...], tuple[int, ...], tuple[int, ...]]:
    """Every (low, high) pair of middle positions a resample of n can have, with their cumulative
    probabilities: one uniform and a bisection draw a resample's pair."""
    if n % 2:
        cdf = _order_statistic_cdf(n, (n + 1) // 2)
        return cdf, tuple(range(n)), tuple(range(n))
    k = n // 2
    cdf, stays = _order_statistic_cdf(n, k), _stays_at(n, k)
    cumulative, lows, highs = [], [], []
    total = previous = 0.0
    for i in range(n):
        at_i, previous = cdf[i] - previous, cdf[i]
        if at_i <= 0:
            continue
        total += at_i * stays[i]
        cumulative.append(total)
        lows.append(i)
        highs.append(i)
        moving = at_i * (1.0 - stays[i])  # P(X_(k) = i < X_(k+1))
        above = 1.0  # P(X_(k+1) > j | X_(k) = i < X_(k+1)), from j = i
        for j in range(i + 1, n):
            if moving * above <= _NEGLIGIBLE:
                break  # what is left above j cannot change a double of the cumulative sum
            after = ((n - 1 - j) / (n - 1 - i)) ** (n - k)
            total += moving * (above - after)
            cumulative.append(total)
            lows.append(i)
            highs.append(j)
            above = after
    # Rounding leaves the total a few ulps off 1: clip, and make the last pair take any u below 1.
    cumulative = [min(c, 1.0) for c in cumulative]
    cumulative[-1] = 1.0
    return tuple(cumulative), tuple(lows), tuple(highs)


def _draw_median_positions(n: int, rng, count: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """`count` resamples' middle positions (low, high) in the sorted values; low == high for odd n."""
    from bisect import bisect_right

    cumulative, lows, highs = _position_table(n)
    draw = rng.random
    picks = [bisect_right(cumulative, draw()) for _ in range(count)]
    return tuple(lows[p] for p in picks), tuple(highs[p] for p in picks)


@functools.lru_cache(maxsize=64)
def _median_positions(n: int, seed: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """BOOTSTRAP_RESAMPLES resamples' middle positions, shared by every metric of a group (same n and seed)."""
    import random

    return _draw_median_positions(n, random.Random(seed), BOOTSTRAP_RESAMPLES)


@functools.lru_cache(maxsize=64)
def _median_position_counts(n: int, seed: int) -> tuple[tuple[int, int, int], ...]:
    """The same resamples as (low, high, how many resamples have them): a few dozen to a few hundred
    distinct pairs instead of BOOTSTRAP_RESAMPLES, so a band sorts those, not every resample's median."""
    from collections import Counter

    low, high = _median_positions(n, seed)
    return tuple((i, j, c) for (i, j), c in Counter(zip(low, high)).items())


def _sorted_present(values: Iterable[Any]) -> list[float]:
    return sorted(float(v) for v in numbers(values))


def bootstrap_medians(values: Iterable[Any], name: str = "") -> list[float] | None:
    """BOOTSTRAP_RESAMPLES medians of resamples of the values; None below two values."""
    data = _sorted_present(values)
    n = len(data)
    if n < 2:
        return None
    low, high = _median_positions(n, _seed(name))
    if n % 2:
        return [data[i] for i in low]
    return [(data[i] + data[j]) / 2 for i, j in zip(low, high)]


def _ranks(count: int) -> tuple[int, int]:
    """Nearest ranks of the central BOOTSTRAP_LEVEL among `count` sorted samples."""
    tail = (1 - BOOTSTRAP_LEVEL) / 2
    return int(tail * (count - 1)), int(math.ceil((1 - tail) * (count - 1)))


def central_interval(samples) -> tuple[float, float]:
    """The central BOOTSTRAP_LEVEL of the samples (nearest ranks)."""
    low_rank, high_rank = _ranks(len(samples))
    ordered = sorted(samples)
    return float(ordered[low_rank]), float(ordered[high_rank])


def _weighted_interval(weighted: list[tuple[float, int]], count: int) -> tuple[float, float]:
    """central_interval of `count` samples given as (value, how many) pairs, sorted by value."""
    low_rank, high_rank = _ranks(count)
    low = None
    seen = 0
    for value, c in weighted:
        seen += c
        if low is None and seen > low_rank:
            low = value
        if seen > high_rank:
            return float(low), float(value)
    raise ValueError(f"{count} samples expected, {seen} given")


def median_interval(values: Iterable[Any], name: str = "") -> tuple[float, float] | None:
    """95 % bootstrap interval of the median; None below two values.

    The central_interval of bootstrap_medians(values, name), read from the counts of distinct
    resampled positions rather than by sorting every resample's median."""
    data = _sorted_present(values)
    n = len(data)
    if n < 2:
        return None
    counts = _median_position_counts(n, _seed(name))
    # The same value per resample as bootstrap_medians gives (odd n: one position).
    weighted = [(data[i], c) for i, _, c in counts] if n % 2 else \
        [((data[i] + data[j]) / 2, c) for i, j, c in counts]
    weighted.sort()
    return _weighted_interval(weighted, BOOTSTRAP_RESAMPLES)


@functools.lru_cache(maxsize=64)
def _paired_position_counts(n_a: int, seed_a: int, n_b: int, seed_b: int) -> tuple[tuple[int, ...], ...]:
    """Resample r of one side beside resample r of the other (the ratio's bootstrap pairs them so),
    counted by distinct (low_a, high_a, low_b, high_b): one count table serves every metric of two runs."""
    from collections import Counter

    (low_a, high_a), (low_b, high_b) = _median_positions(n_a, seed_a), _median_positions(n_b, seed_b)
    return tuple((*key, c) for key, c in Counter(zip(low_a, high_a, low_b, high_b)).items())


def _ratio_interval(a: list, b: list, names: tuple[str, str]) -> tuple[float, float] | None:
    """central_interval of the ratios of bootstrap_medians(b, names[1]) to bootstrap_medians(a, names[0]),
    resample by resample, leaving out a base median of 0; None when every one is 0."""
    data_a, data_b = sorted(float(v) for v in a), sorted(float(v) for v in b)
    n_a, n_b = len(data_a), len(data_b)
    weighted, valid = [], 0
    for low_a, high_a, low_b, high_b, c in _paired_position_counts(n_a, _seed(names[0]), n_b, _seed(names[1])):
        base = data_a[low_a] if n_a % 2 else (data_a[low_a] + data_a[high_a]) / 2
        if base != 0:
            other = data_b[low_b] if n_b % 2 else (data_b[low_b] + data_b[high_b]) / 2
            weighted.append((other / base, c))
            valid += c
    if not valid:
        return None
    weighted.sort()
    return _weighted_interval(weighted, valid)


class Difference(msgspec.Struct, frozen=True):
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
    base_median = _median_of_sorted(sorted(a))
    if base_median == 0:
        return None
    ratio = _median_of_sorted(sorted(b)) / base_median
    if len(a) < MIN_FOR_VERDICT or len(b) < MIN_FOR_VERDICT:
        return Difference(ratio, None, None, "too-few")
    if base_medians is None and other_medians is None:
        interval = _ratio_interval(a, b, names)
    else:
        base_medians = bootstrap_medians(a, names[0]) if base_medians is None else base_medians
        other_medians = bootstrap_medians(b, names[1]) if other_medians is None else other_medians
        ratios = [o / m for m, o in zip(base_medians, other_medians) if m != 0]
        interval = central_interval(ratios) if ratios else None
    if interval is None:
        # Every resampled base median was 0 (a base median that is not 0 makes this all but
        # impossible): no interval to judge by.
        return Difference(ratio, None, None, "too-few")
    low, high = interval
    verdict = "outside-noise" if low > 1 or high < 1 else "within-noise"
    return Difference(ratio, low, high, verdict)


def percentiles(values: Iterable[Any]) -> dict[str, float]:
    """p50/p90/p99 of the values, each only when there are enough values for it."""
    present = sorted(numbers(values))  # one pass and one sort for the three
    return {f"p{pct}": _percentile_of_sorted(present, pct) for pct, needed in PERCENTILE_MIN_N.items()
            if len(present) >= needed}
