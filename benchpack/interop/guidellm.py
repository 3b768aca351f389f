"""GuideLLM `--output kind=json` (`benchmarks.json`, `GenerativeBenchmarksReport`, metadata version 2).

Definitions (guidellm/schemas/base/request_stats.py, 0.8.1):
- `time_to_first_token_ms = first token iteration − request start` — Benchpack's `ttft_s`.
- `inter_token_latency_ms = (last token − first token) ÷ (output tokens − 1)` —
  Benchpack's `tpot_s`, the same formula.
- `time_per_output_token_ms = (last token − request start) ÷ output tokens`
  **includes the first token's wait**: not TPOT, kept under its own name.
- `request_latency` (s) ends at the request's end; kept under its own name.
Every metric is a StatusDistributionSummary (successful / errored / incomplete /
total); the `successful` one is what maps. GuideLLM's percentiles are
numpy's `inverted_cdf` over the per-request values (the tests recompute them).
"""

from __future__ import annotations

from benchpack.interop.common import Imported, Node, parse_json_text, row, sha256

TOOL = "guidellm"
REPORT_VERSION = 2
AGREE = {"time_to_first_token_ms": "ttft_s", "inter_token_latency_ms": "tpot_s"}
OWN = ("time_per_output_token_ms", "request_latency", "time_to_first_output_token_ms", "output_tokens_per_second",
       "tokens_per_second", "requests_per_second", "request_concurrency", "prompt_token_count", "output_token_count")
STATS = ("mean", "median", "std_dev", "min", "max", "count", "total_sum")
STATUSES = ("successful", "errored", "incomplete")


def parse(name: str, data: bytes, tool_version: str | None) -> Imported:
    top = Node(name, parse_json_text(name, data)).obj()
    metadata = top.get("metadata").obj()
    version_of_report = metadata.integer("version")
    if version_of_report != REPORT_VERSION:
        raise metadata.refuse(f"report version {version_of_report} is not {REPORT_VERSION}, the GuideLLM report "
                              "format this benchpack reads", "version")
    version = metadata.text("guidellm_version", most=64)
    if tool_version is not None and tool_version != version:
        raise metadata.refuse(f"the file says {version}, not --tool-version {tool_version}", "guidellm_version")
    benchmarks = top.get("benchmarks").items(most=10_000)
    if not benchmarks:
        raise top.get("benchmarks").refuse("is empty: the report has no benchmarks")
    rows, figures, tool_figures, settings = [], {}, {}, {}
    model = None
    for index, benchmark in enumerate(benchmarks):
        benchmark.obj()
        config = benchmark.get("config").obj()
        strategy = config.get("strategy").obj()
        kind = strategy.text("type_", most=64)
        streams = strategy.integer("streams", required=False, nullable=True, minimum=1, most=1_000_000)
        case = f"benchmark-{index + 1}-{kind}"
        settings[case] = {key: strategy.get(key).value for key in ("type_", "streams", "max_concurrency", "rate",
                                                                    "worker_count")
                          if strategy.has(key) and isinstance(strategy.get(key).value, (int, float, str))}
        metrics = benchmark.get("metrics").obj()
        totals = metrics.get("request_totals").obj()
        counts = {status: totals.integer(status) for status in (*STATUSES, "total")}
        own = {}
        for key in (*AGREE, *OWN):
            summary = metrics.get(key, required=False)
            if summary is None:
                continue
            successful = summary.obj().get("successful").obj()
            stats = {stat: successful.number(stat, minimum=None) for stat in STATS if successful.has(stat)}
            if successful.has("percentiles"):
                stats["percentiles"] = {p: node.number(minimum=None) for p, node in successful.get("percentiles").entries()}
            own[key] = stats
            if key in AGREE:
                scaled = {stat: (value if stat == "count" else value / 1000.0) for stat, value in stats.items()
                          if stat not in ("percentiles", "total_sum")}
                scaled.update({p: value / 1000.0 for p, value in stats.get("percentiles", {}).items()})
                if key == "inter_token_latency_ms":  # GuideLLM's ITL distribution is over token gaps
                    scaled["weighting"] = "each request counts (output tokens - 1) times"
                figures[AGREE[key] if len(benchmarks) == 1 else f"{case}:{AGREE[key]}"] = {
                    "unit": "s", "tool_field": f"{key}.successful", **scaled}
        tool_figures[case] = {"request_totals": counts, **own}
        requests = benchmark.get("requests").obj()
        for status in STATUSES:
            listed = requests.get(status, required=False)
            for request in ([] if listed is None else listed.items()):
                request.obj()
                if model is None and request.has("request_args"):
                    model = _model(request)
                ok = status == "successful"
                ttft = request.number("time_to_first_token_ms", required=False, nullable=True)
                itl = request.number("inter_token_latency_ms", required=False, nullable=True)
                rows.append(row(TOOL, version, case, model, ok=ok, error=None if ok else status,
                                timing={"ttft_s": None if ttft is None or not ok else ttft / 1000.0,
                                        "tpot_s": None if itl is None or not ok else itl / 1000.0},
                                tokens={"prompt": request.integer("prompt_tokens", required=False, nullable=True),
                                        "output": request.integer("output_tokens", required=False, nullable=True)},
                                own={key: request.number(key, required=False, nullable=True, minimum=None)
                                     for key in ("time_per_output_token_ms", "request_latency")},
                                concurrency=streams))
        kept = sum(1 for r in rows if r["case"] == case and r["ok"])
        if kept and kept != counts["successful"] and config.get("sample_size", required=False) is None:
            raise totals.refuse(f"says {counts['successful']} successful requests but the report lists {kept}",
                                "successful")
    return Imported(tool=TOOL, tool_version=version, source_name=name, source_sha256=sha256(data), model=model,
                    rows=rows, figures=figures, tool_figures=tool_figures, settings=settings,
                    unknown=["hardware", "runtime", "server flags"])


def _model(request: Node) -> str | None:
    """The model named in the request GuideLLM sent (request_args is a JSON string)."""
    import json

    text = request.text("request_args", most=1_000_000)
    try:
        body = json.loads(text).get("body") or {}
    except (ValueError, AttributeError):
        return None
    model = body.get("model") if isinstance(body, dict) else None
    return model[:255] if isinstance(model, str) else None
