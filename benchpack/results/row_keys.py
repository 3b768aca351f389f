"""The keys of a row's `timing` and `tokens`, and the rate sources: plain tuples, without msgspec.

The runner writes every one of these keys into every row (`benchpack.results.rows.build_row`), so
`benchpack run` needs the names, not the row contract's typed Structs: importing msgspec and building
them (benchpack.results.contract) cost ~20 ms of CPU before the first request, a tenth of a short run's
fixed cost (docs/measurement.md, "Start-up and closing CPU: stop 38"). The contract's `Timing` and
`Tokens` are checked against these tuples each time it is imported, so the two cannot disagree.
"""

from __future__ import annotations

# Seconds and rates of one execution (docs/measurement.md has each formula), in the contract's order.
TIMING_KEYS: tuple[str, ...] = (
    "wall_s", "ttft_s", "prefill_tps", "decode_tps", "total_tps", "ttfb_s", "ttft_any_s", "tpot_s", "ttft_tool_s",
    "rate_source", "placement",
)
TOKEN_KEYS: tuple[str, ...] = ("prompt", "output", "cached_prompt", "source")

# Where `prefill_tps` / `decode_tps` came from: the client's own clock, or the server's
# own counters (Ollama's prompt_eval_* / eval_* when a non-streamed response has no
# arrival times to compute them from).
RATE_SOURCES = ("client", "native")
