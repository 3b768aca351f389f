import pytest

from benchpack.selfcheck import selftest
from benchpack.selfcheck.selftest import Plan, percentile, verdict
from tests.environment import unavailable


def figures(**overrides):
    base = {"ttft_overhead_median_ms": 0.1, "ttft_overhead_p99_ms": 0.5, "tpot_error_10ms_pct": 0.1,
            "tpot_error_0_5ms_pct": 1.0, "cpu_per_chunk_us": 20.0}
    base.update(overrides)
    return base


def baseline():
    return figures(ttft_overhead_median_ms=0.4, cpu_per_chunk_us=60.0)


def test_it_passes_every_check_when_targets_are_met_and_baselines_are_beaten():
    checks = verdict({"benchpack": figures(), "httpx lines": baseline(), "aiohttp": baseline()})
    assert all(c.passed for c in checks)
    assert len(checks) == len(selftest.TARGETS) + len(selftest.BEAT_BASELINES)


@pytest.mark.parametrize("metric, value", [("ttft_overhead_p99_ms", 1.5), ("tpot_error_0_5ms_pct", 2.5),
                                           ("cpu_per_chunk_us", 31.0), ("ttft_overhead_median_ms", None)])
def test_it_fails_the_check_for_a_missed_or_missing_figure(metric, value):
    checks = verdict({"benchpack": figures(**{metric: value}), "aiohttp": baseline()})
    failed = [c.label for c in checks if not c.passed]
    assert failed and all(any(t.label in label for t in selftest.TARGETS if t.metric == metric) for label in failed)


def test_it_fails_when_a_baseline_is_faster_even_if_the_absolute_target_holds():
    checks = verdict({"benchpack": figures(cpu_per_chunk_us=25.0), "aiohttp": figures(ttft_overhead_median_ms=0.4, cpu_per_chunk_us=24.0)})
    [failed] = [c for c in checks if not c.passed]
    assert "lower than every baseline" in failed.label and "aiohttp 24.000" in failed.detail


def test_it_uses_the_one_percentile_definition_of_measurement_stats():
    from benchpack.measurement import stats

    values = list(range(1, 101))
    assert percentile is stats.percentile
    assert percentile(values, 99) == 99.01  # interpolated between the 99th and 100th values
    assert percentile(values, 50) == 50.5  # the median
    assert percentile([3.0], 99) == 3.0
    assert percentile([], 99) is None


def test_it_flags_rows_the_tiny_pack_run_got_wrong():
    good = {"ok": True, "repetition": 1, "tokens": {"output": 6, "cached_prompt": 3, "source": "usage"},
            "timing": {"ttft_s": 0.1, "ttfb_s": 0.05, "tpot_s": 0.001, "decode_tps": 10.0},
            "scoring": {"mode": "contains", "passed": True}}
    assert selftest._tiny_pack_problems([good, {**good, "repetition": 2}], 3) == []
    bad = {**good, "repetition": 2, "timing": {**good["timing"], "ttft_s": None}}
    problems = selftest._tiny_pack_problems([good, bad], 4)
    assert any("server saw 4" in p for p in problems) and any("repetition 2: timing" in p for p in problems)


@pytest.mark.slow
def test_it_measures_every_figure_for_every_client_against_the_reference_server():
    plan = Plan(ttft_requests=3, slow_requests=1, slow_tokens=5, fast_requests=1, fast_tokens=20)
    notes = []
    result = selftest.measure(plan, announce=notes.append, isolated=False)
    assert notes == ["every phase at normal priority"]
    assert set(result) == set(selftest.CLIENTS)
    for fig in result.values():
        summary = fig.summary()
        assert all(value is not None for value in summary.values()), summary
        assert len(fig.ttft_overhead_s) == 3


def test_it_raises_and_restores_scheduling_priority_or_says_it_could_not():
    import os

    if selftest.realtime_priority([0], True):
        try:
            assert os.sched_getscheduler(0) == os.SCHED_FIFO
        finally:
            assert selftest.realtime_priority([0], False)
    assert os.sched_getscheduler(0) == os.SCHED_OTHER


def test_it_restores_normal_priority_on_threads_started_while_raised():
    # Threads inherit SCHED_FIFO; the reference server's connection threads
    # left at real-time priority once skewed the CPU phase by ~30 %.
    import os
    import threading

    if not selftest.realtime_priority([0], True):
        unavailable("this process may not raise its scheduling priority (CI runs as root)")
    reset, seen = threading.Event(), []

    def worker():
        seen.append(os.sched_getscheduler(0))
        reset.wait(5)
        seen.append(os.sched_getscheduler(0))

    thread = threading.Thread(target=worker)
    try:
        thread.start()
        while not seen:
            pass
    finally:
        assert selftest.realtime_priority([0], False)
        reset.set()
        thread.join()
    assert seen == [os.SCHED_FIFO, os.SCHED_OTHER]


def test_the_burst_check_passes_against_a_server_that_sends_every_token_at_once():
    check = selftest.burst_check()
    assert check.passed, check.detail
    assert "3 of 3 ok rows have no TPOT" in check.detail


def test_the_other_adapters_are_held_to_the_latency_targets_and_are_not_baselines():
    summaries = {"benchpack": figures(), "aiohttp": baseline(),
                 "benchpack anthropic-messages": figures(ttft_overhead_p99_ms=1.4, cpu_per_chunk_us=45.0),
                 "benchpack openai-responses": figures(cpu_per_chunk_us=45.0)}
    checks = verdict(summaries)
    failed = [c.label for c in checks if not c.passed]
    assert failed == ["anthropic-messages: TTFT overhead, p99 ≤ 1 ms"]
    labels = [c.label for c in checks]
    assert sum(label.startswith("openai-responses: ") for label in labels) == len(selftest.ADAPTER_TARGETS)
    assert "tpot" in " ".join(selftest.ADAPTER_TARGETS) and "ttft_overhead_p99_ms" in selftest.ADAPTER_TARGETS
