import statistics

from hypothesis import given, strategies as st

from benchpack.measurement.stats import is_number, median, percentile, spread


def test_it_ignores_values_that_are_not_finite_numbers():
    values = [3, None, True, "4", float("nan"), float("inf"), 1, 2.5]
    assert median(values) == 2.5
    assert not is_number(False)
    assert median([None, "x"]) is None


def test_it_summarises_repetition_spread():
    s = spread([0.3, None, 0.1, 0.2])
    assert (s.count, s.min, s.median, s.max) == (3, 0.1, 0.2, 0.3)
    assert spread([]) is None


def test_it_interpolates_percentiles_between_ranks():
    assert percentile([10, 20, 30, 40, 50], 90) == 46.0
    assert percentile([7], 90) == 7
    assert percentile([], 90) is None


@given(st.lists(st.floats(min_value=-1e6, max_value=1e6), min_size=1, max_size=30))
def test_it_keeps_p50_equal_to_the_median_and_p90_within_range(values):
    assert abs(percentile(values, 50) - statistics.median(values)) <= 1e-6 * max(1.0, max(abs(v) for v in values))
    assert min(values) <= percentile(values, 90) <= max(values) + 1e-9


def test_bootstrap_medians_are_the_medians_of_resamples_and_repeatable():
    # That they are distributed as real resampling's medians: tests/measurement/test_measurement_bootstrap.py.
    from benchpack.measurement.stats import BOOTSTRAP_RESAMPLES, bootstrap_medians, median_interval

    for values in ([0.3, 0.1, 0.2], [4.0, 1.0, 3.0, 2.0], [float(v) for v in range(17)]):
        medians = bootstrap_medians(values, "run\0case")
        assert len(medians) == BOOTSTRAP_RESAMPLES
        assert min(values) <= min(medians) and max(medians) <= max(values)
        assert medians == bootstrap_medians(values, "run\0case")
    assert bootstrap_medians([1.0], "x") is None and median_interval([None, 2.0]) is None
    low, high = median_interval([0.1, 0.2, 0.3])
    assert 0.1 <= low <= 0.2 <= high <= 0.3


def test_two_runs_are_resampled_independently():
    from benchpack.measurement.stats import bootstrap_medians

    values = [float(v) for v in range(9)]
    assert bootstrap_medians(values, "one\0a") != bootstrap_medians(values, "two\0a")
