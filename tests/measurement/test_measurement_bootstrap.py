"""The bootstrap's median positions have the distribution of real resampling (benchpack/measurement/stats.py).

stats draws a resample's middle positions from their exact distribution
instead of drawing n values and sorting them. These tests hold that sampler
against brute force (random.choices + sort), show that the comparison is
strict enough to catch a wrong formula, and check the bands stay
deterministic per name.
"""

import functools
import itertools
import math
import random
from collections import Counter

import pytest

from benchpack.measurement import stats
from benchpack.measurement.stats import BOOTSTRAP_RESAMPLES, bootstrap_medians, central_interval, difference

DRAWS = 40_000
SIZES = (2, 3, 10, 11, 100)


@functools.lru_cache(maxsize=None)
def truth(n: int) -> dict[str, list]:
    return views(brute_force(n, random.Random(1000 + n), DRAWS))


def brute_force(n: int, rng: random.Random, draws: int) -> list[tuple[int, int]]:
    """What the bootstrap means: n picks with replacement, sorted; the middle one or two positions."""
    population = range(n)
    out = []
    for _ in range(draws):
        picks = sorted(rng.choices(population, k=n))
        out.append((picks[(n - 1) // 2], picks[n // 2]))
    return out


def sampled(n: int, rng: random.Random, draws: int) -> list[tuple[int, int]]:
    low, high = stats._draw_median_positions(n, rng, draws)
    return list(zip(low, high))


def beta_order_statistics(n: int, rng: random.Random, draws: int, *, wrong: bool = False) -> list[tuple[int, int]]:
    """The continuous route: U_(k) ~ Beta(k, n+1-k), U_(k+1) = U_(k) + (1-U_(k))(1 - V^(1/(n-k))), positions floor(n U).

    `wrong=True` uses Beta(k, n-k), the off-by-one a careless derivation gives; the check below must reject it."""
    k = (n + 1) // 2 if n % 2 else n // 2
    out = []
    for _ in range(draws):
        u = rng.betavariate(k, n - k if wrong else n + 1 - k)
        low = min(int(n * u), n - 1)
        if n % 2:
            out.append((low, low))
            continue
        nxt = u + (1 - u) * (1 - rng.random() ** (1 / (n - k)))
        out.append((low, min(int(n * nxt), n - 1)))
    return out


def wilson_hilferty(df: int, z: float = 3.719) -> float:
    """Upper chi-square quantile (z = 3.719: alpha = 1e-4); no scipy in the core's test environment."""
    return df * (1 - 2 / (9 * df) + z * math.sqrt(2 / (9 * df))) ** 3


def homogeneity(a: list, b: list) -> tuple[float, float]:
    """Two-sample chi-square statistic over the categories of a and b (equal sizes), and its critical value.

    Categories seen fewer than 20 times in both samples together are pooled, so every cell's expected count is >= 10."""
    ca, cb = Counter(a), Counter(b)
    cells, pooled = [], [0, 0]
    for key in set(ca) | set(cb):
        if ca[key] + cb[key] >= 20:
            cells.append((ca[key], cb[key]))
        else:
            pooled[0] += ca[key]
            pooled[1] += cb[key]
    if sum(pooled) >= 20:
        cells.append(tuple(pooled))
    elif cells:
        cells[-1] = (cells[-1][0] + pooled[0], cells[-1][1] + pooled[1])
    statistic = sum((x - y) ** 2 / (x + y) for x, y in cells)
    return statistic, wilson_hilferty(max(len(cells) - 1, 1))


def views(pairs: list[tuple[int, int]]) -> dict[str, list]:
    # The joint pair, and the two things a median is made of (the sum of the positions: where the
    # median sits; the gap: how far apart the two middle values are), each more sensitive to a shift.
    return {"pair": pairs, "sum": [i + j for i, j in pairs], "gap": [j - i for i, j in pairs]}


def disagreement(n: int, candidate) -> dict[str, tuple[float, float]]:
    expected = truth(n)  # the same brute-force draws for every candidate
    other = views(candidate(n, random.Random(2000 + n), DRAWS))
    return {name: homogeneity(expected[name], other[name]) for name in expected}


@pytest.mark.parametrize("n", SIZES)
def test_sampled_median_positions_agree_with_brute_force_resampling(n):
    for view, (statistic, critical) in disagreement(n, sampled).items():
        assert statistic < critical, f"n={n} {view}: chi-square {statistic:.1f} >= {critical:.1f}"


@pytest.mark.parametrize("n", SIZES)
def test_the_continuous_order_statistics_route_agrees_too(n):
    for view, (statistic, critical) in disagreement(n, beta_order_statistics).items():
        assert statistic < critical, f"n={n} {view}: chi-square {statistic:.1f} >= {critical:.1f}"


@pytest.mark.parametrize("n", SIZES)
def test_the_check_rejects_a_wrong_formula(n):
    """Beta(k, n-k) instead of Beta(k, n+1-k): the check has the power to tell, at every n."""
    result = disagreement(n, lambda n, rng, draws: beta_order_statistics(n, rng, draws, wrong=True))
    assert any(statistic >= critical for statistic, critical in result.values()), result


@pytest.mark.parametrize("n", (2, 3, 4, 5, 6))
def test_the_position_table_equals_full_enumeration(n):
    exact = Counter()
    for picks in itertools.product(range(n), repeat=n):
        ordered = sorted(picks)
        exact[(ordered[(n - 1) // 2], ordered[n // 2])] += 1
    cumulative, lows, highs = stats._position_table(n)
    table = {}
    for c, before, pair in zip(cumulative, (0.0, *cumulative), zip(lows, highs)):
        table[pair] = table.get(pair, 0.0) + c - before
    assert {pair: p for pair, p in table.items() if p > 1e-15} == \
        pytest.approx({pair: c / n ** n for pair, c in exact.items()}, abs=1e-14)


def test_large_n_tables_are_distributions():
    for n in (1000, 1001):
        cumulative, lows, highs = stats._position_table(n)
        assert all(a <= b for a, b in zip(cumulative, cumulative[1:])) and cumulative[-1] == 1.0
        assert all(low <= high for low, high in zip(lows, highs))
        k = (n + 1) // 2 if n % 2 else n // 2
        # E[U_(k)] = k/(n+1), and floor(n U) is on average half a position below n U.
        mean = sum(low * (c - before) for c, before, low in zip(cumulative, (0.0, *cumulative), lows))
        assert mean == pytest.approx(n * k / (n + 1) - 0.5, abs=0.01)


def test_bands_are_deterministic_per_name_and_differ_between_names():
    values = [0.3, 0.1, 0.2, 0.25, 0.15, 0.12, 0.4, 0.22, 0.31, 0.18]
    first = bootstrap_medians(values, "run\0case")
    stats._median_positions.cache_clear()  # drawn afresh, not read back from the cache
    assert bootstrap_medians(values, "run\0case") == first
    assert len(first) == BOOTSTRAP_RESAMPLES
    assert bootstrap_medians(values, "other\0case") != first
    assert central_interval(first) == central_interval(bootstrap_medians(values, "run\0case"))


def test_every_bootstrap_median_is_a_median_some_resample_can_have():
    for values in ([0.3, 0.1, 0.2], [4.0, 1.0, 3.0, 2.0], [float(v * v) for v in range(12)]):
        data = sorted(values)
        possible = {(data[i] + data[j]) / 2 for i in range(len(data)) for j in range(i, len(data))}
        medians = bootstrap_medians(values, "x")
        assert set(medians) <= possible
        if len(values) % 2:
            assert set(medians) <= set(data)


def test_difference_judges_clear_shifts_and_keeps_noise_within():
    base = [1.0 + 0.01 * i for i in range(10)]
    assert difference(base, [v * 1.5 for v in base]).verdict == "outside-noise"
    same = difference(base, list(reversed(base)), names=("a", "b"))
    assert same.verdict == "within-noise" and same.low < 1 < same.high
    # Every resampled base median 0 (impossible to judge by): no interval, not a crash.
    zeros = difference([0.0, 5.0, 5.0], [1.0, 1.0, 1.0], base_medians=[0.0] * 5, other_medians=[1.0] * 5)
    assert (zeros.low, zeros.high, zeros.verdict) == (None, None, "too-few")


@pytest.mark.parametrize("n", (2, 3, 4, 9, 10, 57, 100))
def test_the_band_from_position_counts_is_the_band_of_every_resamples_median(n):
    rng = random.Random(n)
    for name in ("a", "run\0case"):
        values = [round(rng.lognormvariate(0, 1), 2) for _ in range(n)]  # rounded: ties too
        assert stats.median_interval(values, name) == central_interval(bootstrap_medians(values, name))


@pytest.mark.parametrize("sizes", [(3, 3), (4, 7), (10, 10), (100, 101)])
def test_the_ratio_interval_from_paired_counts_is_that_of_every_resamples_ratio(sizes):
    rng = random.Random(sum(sizes))
    base = [round(rng.lognormvariate(0, 0.3), 2) for _ in range(sizes[0])]
    other = [round(rng.lognormvariate(0.1, 0.3), 2) for _ in range(sizes[1])]
    base[0] = 0.0  # some resampled base medians may be 0: left out in both forms
    names = ("run-a\0case", "run-b\0case")
    base_medians, other_medians = bootstrap_medians(base, names[0]), bootstrap_medians(other, names[1])
    listed = difference(base, other, base_medians=base_medians, other_medians=other_medians)
    counted = difference(base, other, names=names)
    assert counted == listed
    assert (counted.low, counted.high) == central_interval(
        [o / b for b, o in zip(base_medians, other_medians) if b != 0])
