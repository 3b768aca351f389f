"""The measuring proxy's added latency, measured as docs/agents.md publishes it (fewer requests here)."""

from benchpack.selfcheck import proxycheck


def test_the_proxy_adds_well_under_a_millisecond_at_the_median_and_records_every_request():
    figures = proxycheck.measure(requests=60, slow_requests=2, slow_tokens=20)
    assert figures["turn_rows"] == 60 + 2 + 1  # every proxied request, warm-up included, has its row
    assert figures["added_ttft_p50_ms"] < 1.0
    assert figures["added_ttft_p99_ms"] < 10.0  # the published p99 comes from the full run; this machine is shared
    assert figures["tpot_error_10ms_proxied_pct"] < 0.5


def test_the_target_check_reads_the_p99_figure():
    assert proxycheck.passes({"added_ttft_p99_ms": 0.9}) and not proxycheck.passes({"added_ttft_p99_ms": 1.2})
