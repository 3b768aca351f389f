"""Change detection on regression timelines needs evidence before it calls a step."""

from datetime import datetime, timedelta, timezone

import pytest

from registry_site.catalogue import timelines as tl

START = datetime(2026, 1, 1, tzinfo=timezone.utc)


def series(values, version="b1"):
    return [tl.Point(run_id=i + 1, published_at=START + timedelta(days=i), runtime_version=version, value=v)
            for i, v in enumerate(values)]


def test_it_gives_no_verdict_until_enough_prior_runs_exist():
    verdicts = tl.detect_changes(series([100, 101, 99, 50]), "decode_tps")
    assert [v.verdict for v in verdicts] == [tl.NO_VERDICT] * 4
    assert verdicts[-1].prior == 3 and "2 more needed" in verdicts[-1].reason


def test_a_drop_outside_the_spread_of_enough_runs_is_a_regression_for_a_rate():
    verdicts = tl.detect_changes(series([100, 102, 98, 101, 99, 80]), "decode_tps")
    last = verdicts[-1]
    assert last.verdict == tl.REGRESSION and last.prior == 5
    assert last.baseline_min == 98 and last.baseline_max == 102 and last.baseline_median == 100
    assert last.change == pytest.approx(-0.2) and "below the lowest" in last.reason


def test_direction_follows_the_metric_lower_times_are_improvements():
    assert tl.detect_changes(series([1.0, 1.02, 0.98, 1.01, 0.99, 0.8]), "ttft_s")[-1].verdict == tl.IMPROVEMENT
    assert tl.detect_changes(series([1.0, 1.02, 0.98, 1.01, 0.99, 1.3]), "ttft_s")[-1].verdict == tl.REGRESSION


def test_a_value_inside_the_spread_is_no_change_even_when_far_from_the_median():
    verdicts = tl.detect_changes(series([100, 60, 140, 100, 100, 65]), "decode_tps")
    assert verdicts[-1].verdict == tl.NO_CHANGE and "inside the spread" in verdicts[-1].reason


def test_a_tiny_move_outside_a_tight_spread_is_not_called_a_change():
    verdicts = tl.detect_changes(series([100.0, 100.1, 99.9, 100.0, 100.05, 99.0]), "decode_tps")
    assert verdicts[-1].verdict == tl.NO_CHANGE and "needs 5%" in verdicts[-1].reason


def test_the_lookback_window_forgets_old_runs():
    values = [50] * 5 + [100, 101, 99, 100, 102] + [51]
    # with lookback 5 the baseline is the five ~100 runs: 51 is a regression
    assert tl.detect_changes(series(values), "decode_tps", lookback=5)[-1].verdict == tl.REGRESSION
    # with the whole history the 50s are inside the spread
    assert tl.detect_changes(series(values), "decode_tps", lookback=20)[-1].verdict == tl.NO_CHANGE


def test_points_without_a_value_are_skipped_not_counted_as_evidence():
    points = series([100, None, 101, None, 99, 100, 98, 70])
    verdicts = tl.detect_changes(points, "decode_tps")
    assert len(verdicts) == 6 and verdicts[-1].prior == 5 and verdicts[-1].verdict == tl.REGRESSION


def test_an_unknown_metric_is_refused_with_its_name():
    with pytest.raises(ValueError, match="metric: 'speed'"):
        tl.detect_changes(series([1]), "speed")


def test_versions_are_summarised_in_order_of_first_appearance():
    points = series([10, 12], "b100") + series([20, 22, 24], "b200")
    summary = tl.by_runtime_version(points)
    assert [(s.runtime_version, s.runs, s.median, s.min, s.max) for s in summary] == [
        ("b100", 2, 11, 10, 12), ("b200", 3, 22, 20, 24)]
