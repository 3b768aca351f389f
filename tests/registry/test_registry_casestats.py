"""Case medians: numpy's partition medians agree with the statistics module's."""

import math
import statistics

from hypothesis import given, settings, strategies as st

from benchpack.registry.casestats import FIGURES, METRICS, CaseStatsBuilder

metric = st.one_of(st.none(), st.just(math.nan), st.integers(0, 10**6),
                   st.floats(-1e9, 1e9, allow_nan=False, allow_infinity=False))
row = st.tuples(st.booleans(), st.one_of(st.none(), st.integers(0, 1)), st.tuples(*[metric] * len(METRICS)))


@settings(max_examples=200, deadline=None)
@given(st.lists(row, max_size=30))
def test_it_takes_medians_over_reported_ok_values_like_the_statistics_module(rows):
    builder = CaseStatsBuilder()
    for ok, passed, metrics in rows:
        builder.add(("p", "1", "c", "a", "m"), ok, passed, metrics)
    built = builder.build()
    if not rows:
        assert built == []
        return
    (stats,) = built
    ok_rows = [metrics for ok, _, metrics in rows if ok]
    assert (stats.row_count, stats.ok_count) == (len(rows), len(ok_rows))
    assert stats.scored_count == sum(passed is not None for _, passed, _ in rows)
    assert stats.passed_count == sum(passed or 0 for _, passed, _ in rows)
    for i, name in enumerate(FIGURES):
        values = [m[i] for m in ok_rows if m[i] is not None and not math.isnan(m[i])]
        if name == "decode_rate":  # the decode figure: each row's 1/tpot_s, rows with a positive, finite one
            values = [1 / v for v in values if v > 0 and math.isfinite(1 / v)]
        if not values:
            assert stats.medians[name] is None
            continue
        assert math.isclose(stats.medians[name], statistics.median(values), rel_tol=1e-12)
        if name == "prompt_tokens":
            assert stats.prompt_token_rows == len(values)


group_row = st.tuples(st.sampled_from("abcd"), row)


@settings(max_examples=300, deadline=None)
@given(st.lists(group_row, max_size=60))
def test_it_takes_every_groups_medians_at_once_exactly_as_one_group_at_a_time(rows):
    together, alone = CaseStatsBuilder(), {}
    for case, (ok, passed, metrics) in rows:
        together.add(("p", "1", case, "a", "m"), ok, passed, metrics)
        alone.setdefault(case, CaseStatsBuilder()).add(("p", "1", case, "a", "m"), ok, passed, metrics)
    expected = [stats for builder in alone.values() for stats in builder.build()]
    assert together.build() == expected  # NaN never reaches a median: equal dicts, same key order
