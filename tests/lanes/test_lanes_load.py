"""The concurrency lane's client under load, against the scripted endpoint's per-stream scripts
(benchpack.selfcheck.loadtest): the same figures bench/concurrency.py prints, on a small plan."""

from __future__ import annotations

from benchpack.selfcheck import loadtest


def test_lane_client_keeps_every_stream_and_its_timing():
    plan = loadtest.LoadPlan(streams=16, rounds=1, tokens=12, ttft_s=(0.02, 0.06), itl_s=(0.01, 0.02), seed=3)
    client = loadtest.lane_client()
    try:
        figures = loadtest.measure_load(client, plan)
    finally:
        client.close()
    assert figures.failures == []
    assert len(figures.ttft_overhead_s) == 16 and figures.chunks == 16 * 12
    # What the client measured is whole and causal; how small the overhead and error are is a latency figure,
    # measured with its limits by bench/concurrency.py (docs/lanes.md, docs/testing.md), not checked here.
    assert len(figures.tpot_error_pct) == 16 and all(e >= 0 and e == e for e in figures.tpot_error_pct)
    assert min(figures.ttft_overhead_s) >= 0  # the client never sees a token before the server sent it
