"""Change detection on regression timelines needs evidence before it calls a step."""

import random
from datetime import datetime, timedelta, timezone

import pytest

from registry_site.catalogue import timelines as tl

START = datetime(2026, 1, 1, tzinfo=timezone.utc)
STEADY = [100, 102, 98, 101, 99]


def series(values, version="b1"):
    return [tl.Point(run_id=i + 1, published_at=START + timedelta(days=i), runtime_version=version, value=v)
            for i, v in enumerate(values)]


def verdicts_of(values, metric="decode_rate", **rules):
    return [v.verdict for v in tl.detect_changes(series(values), metric, **rules)]


def test_it_gives_no_verdict_until_enough_earlier_runs_exist():
    verdicts = tl.detect_changes(series([100, 101, 99, 50, 50, 50]), "decode_rate")
    assert [v.verdict for v in verdicts] == [tl.NO_VERDICT] * 6
    assert verdicts[3].prior == 3 and "2 more needed" in verdicts[3].reason


def test_a_drop_confirmed_by_the_next_runs_is_one_regression_at_its_first_run():
    verdicts = tl.detect_changes(series(STEADY + [80, 81, 79, 80]), "decode_rate")
    assert [v.verdict for v in verdicts] == [tl.NO_VERDICT] * 5 + [tl.REGRESSION, tl.NO_CHANGE, tl.NO_VERDICT,
                                                                   tl.NO_VERDICT]
    step = verdicts[5]
    assert step.run_id == 6 and step.prior == 5
    assert (step.baseline_min, step.baseline_max, step.baseline_median) == (98, 102, 100)
    assert step.change == pytest.approx(-0.2) and "all below the lowest of the 5 runs before it" in step.reason
    assert "more run(s) after this one" in verdicts[-1].reason  # the newest runs wait for confirmation


def test_one_outlier_is_not_a_step():
    assert tl.REGRESSION not in verdicts_of(STEADY + [60, 100, 101, 99, 100])
    assert tl.REGRESSION not in verdicts_of(STEADY + [60, 61, 100, 99, 100])  # two low runs: not confirmed


def test_the_newest_runs_wait_for_confirmation():
    verdicts = tl.detect_changes(series(STEADY + [80, 80]), "decode_rate")
    assert [v.verdict for v in verdicts][5:] == [tl.NO_VERDICT, tl.NO_VERDICT]
    assert "1 more run(s) after this one" in verdicts[5].reason


def test_direction_follows_the_metric_lower_times_are_improvements():
    times = [1.0, 1.02, 0.98, 1.01, 0.99]
    assert verdicts_of(times + [0.8, 0.8, 0.81], "ttft_s")[5] == tl.IMPROVEMENT
    assert verdicts_of(times + [1.3, 1.3, 1.31], "ttft_s")[5] == tl.REGRESSION


def test_a_tiny_move_beyond_a_tight_spread_is_not_called_a_step():
    verdicts = tl.detect_changes(series([100.0, 100.1, 99.9, 100.0, 100.05, 99.0, 99.0, 99.0]), "decode_rate")
    assert verdicts[5].verdict == tl.NO_CHANGE and "needs 5%" in verdicts[5].reason


def test_the_lookback_window_forgets_old_runs():
    values = [50] * 5 + [100, 101, 99, 100, 102] + [51, 52, 50]
    assert verdicts_of(values, lookback=5)[10] == tl.REGRESSION
    assert verdicts_of(values, lookback=20)[10] == tl.NO_CHANGE  # the 50s are inside the spread


def test_points_without_a_value_are_skipped_not_counted_as_evidence():
    verdicts = tl.detect_changes(series([100, None, 101, None, 99, 100, 98, 70, 70, 70]), "decode_rate")
    assert len(verdicts) == 8 and verdicts[5].prior == 5 and verdicts[5].verdict == tl.REGRESSION


def test_noise_alone_is_rarely_flagged_and_a_planted_step_is_found():
    """4 % gaussian noise, as the seeded catalogue: the rule's false alarm rate and its power."""
    rng = random.Random(7)
    noise = [100 * rng.gauss(1, 0.04) for _ in range(5000)]
    flags = [v for v in verdicts_of(noise) if v in (tl.REGRESSION, tl.IMPROVEMENT)]
    assert len(flags) / len(noise) < 0.005  # about 0.1 % expected
    found = 0
    for trial in range(50):
        values = [100 * rng.gauss(1, 0.04) for _ in range(20)] + [85 * rng.gauss(1, 0.04) for _ in range(10)]
        found += verdicts_of(values)[20] == tl.REGRESSION
    assert found >= 35  # a 15 % step in 4 % noise is usually caught at its first run


def test_an_unknown_metric_is_refused_with_its_name():
    with pytest.raises(ValueError, match="metric: 'speed'"):
        tl.detect_changes(series([1]), "speed")


def test_versions_are_summarised_in_order_of_first_appearance():
    points = series([10, 12], "b100") + series([20, 22, 24], "b200")
    summary = tl.by_runtime_version(points)
    assert [(s.runtime_version, s.runs, s.median, s.min, s.max) for s in summary] == [
        ("b100", 2, 11, 10, 12), ("b200", 3, 22, 20, 24)]
