"""`vllm bench serve --save-result [--save-detailed]` JSON (one object; `--append-result` files: one a line).

Definitions (vllm/benchmarks/serve.py `calculate_metrics`):
- `ttft`: request sent → first chunk with text, client clock — Benchpack's `ttft_s`.
- `tpot = (latency − ttft) ÷ (output_len − 1)`, latency ending at the last chunk
  with text — Benchpack's `tpot_s` (first to last token over the gaps).
- `itl`: every gap between chunks, pooled over all requests — a chunk-weighted
  figure, not TPOT: kept as `itl_ms`.
- `e2el`: request sent → last chunk with text; Benchpack's `wall_s` runs to the
  last byte of the response (after the usage chunk and `[DONE]`): kept as `e2el_ms`.
- throughputs divide by the whole benchmark's duration: kept under their names.
vLLM writes no version of itself, no hardware and no server flags.
"""

from __future__ import annotations

import re

from benchpack.interop.common import Imported, Node, parse_json_text, read_json_lines, row, sha256

TOOL = "vllm"
STATS = re.compile(r"^(mean|median|std|p\d+(?:\.\d+)?)_(ttft|tpot|itl|e2el)_ms$")
AGREE = {"ttft": "ttft_s", "tpot": "tpot_s"}  # vLLM figure -> Benchpack metric, same definition
TOTALS = ("duration", "completed", "failed", "total_input_tokens", "total_output_tokens", "request_throughput",
          "request_goodput", "output_throughput", "total_token_throughput", "max_output_tokens_per_s",
          "max_concurrent_requests")
SETTINGS = ("date", "endpoint_type", "backend", "label", "model_id", "tokenizer_id", "num_prompts", "request_rate",
            "burstiness", "max_concurrency", "ramp_up_strategy", "ramp_up_start_rps", "ramp_up_end_rps")


def parse(name: str, data: bytes, tool_version: str | None) -> Imported:
    text = data.lstrip()
    if text.startswith(b"{") and b"\n{" in data.strip():  # --append-result: one JSON object a line
        records = [Node(name, value, f"line {number}") for number, value in read_json_lines(name, data)]
        if len(records) != 1:
            raise records[1].refuse("holds more than one run (--append-result); import one run per file")
        top = records[0]
    else:
        top = Node(name, parse_json_text(name, data))
    top.obj()
    if not top.has("completed") and not top.has("mean_ttft_ms"):
        raise top.refuse("missing: not a vllm bench serve result (no 'completed')", "completed")
    completed = top.integer("completed")
    failed = top.integer("failed", required=False) or 0
    total_output = top.integer("total_output_tokens")
    top.integer("total_input_tokens")
    duration = top.number("duration")
    if duration <= 0:
        raise top.refuse("must be greater than 0", "duration")
    model = top.text("model_id", required=False, nullable=True)
    max_concurrency = top.integer("max_concurrency", required=False, nullable=True, minimum=1, most=1_000_000)

    tool_figures: dict = {}
    for key in TOTALS:
        if top.has(key):
            tool_figures[key] = top.integer(key) if key in ("completed", "failed", "total_input_tokens",
                                                            "total_output_tokens", "max_concurrent_requests") \
                else top.number(key)
    figures: dict[str, dict] = {}
    for key, node in top.entries():
        match = STATS.match(key)
        if not match:
            continue
        stat, metric = match.groups()
        value = node.number()
        tool_figures[key] = value
        if metric in AGREE:
            figures.setdefault(AGREE[metric], {"unit": "s", "tool_field": f"*_{metric}_ms"})[stat] = value / 1000.0
    if not any(key.endswith("_ttft_ms") for key in tool_figures):
        raise top.refuse("missing: the result has no TTFT figures", "mean_ttft_ms")
    for metric in figures.values():
        metric["count"] = completed
    settings = {key: top.get(key).value for key in SETTINGS if top.has(key)
                and isinstance(top.get(key).value, (str, int, float))}

    rows = _detailed_rows(top, tool_version, model, completed, failed, total_output, max_concurrency)
    if rows is None:  # saved without --save-detailed: the aggregates only
        rows = [row(TOOL, tool_version, "vllm-bench-serve", model, ok=True,
                    own={"aggregate_only": True, "completed": completed}, concurrency=max_concurrency)]
    return Imported(tool=TOOL, tool_version=tool_version, source_name=name, source_sha256=sha256(data),
                    model=model, rows=rows, figures=figures, tool_figures=tool_figures, settings=settings,
                    unknown=["hardware", "runtime", "server flags"] + ([] if tool_version else ["tool version"]))


def _detailed_rows(top: Node, tool_version, model, completed, failed, total_output, concurrency) -> list[dict] | None:
    if not top.has("ttfts"):
        return None
    ttfts = top.get("ttfts").items()
    n = len(ttfts)
    columns = {key: top.get(key).items() for key in ("itls", "output_lens", "input_lens", "errors")}
    latencies = top.get("latencies").items() if top.has("latencies") else None
    for key, values in [*columns.items(), ("latencies", latencies or ttfts)]:
        if len(values) != n:
            raise top.get(key).refuse(f"has {len(values)} entries but ttfts has {n}")
    if n != completed + failed:
        raise top.refuse(f"ttfts has {n} entries but completed + failed is {completed + failed}", "ttfts")
    rows, succeeded, output_sum = [], 0, 0
    for i in range(n):
        error = columns["errors"][i].text(most=100_000)
        ok = error == ""
        ttft = ttfts[i].number(most=86_400)
        itls = [gap.number(most=86_400) for gap in columns["itls"][i].items(most=10_000_000)]
        output = columns["output_lens"][i].integer()
        prompt = columns["input_lens"][i].integer()
        latency = latencies[i].number(most=86_400) if latencies is not None else None
        timing, own = {}, {"itl_s": itls}
        if ok:
            succeeded += 1
            output_sum += output
            timing["ttft_s"] = ttft
            if latency is not None:
                if latency < ttft:
                    raise latencies[i].refuse(f"is less than ttfts[{i}]")
                own["e2el_s"] = latency
                if output > 1:
                    timing["tpot_s"] = (latency - ttft) / (output - 1)
        rows.append(row(TOOL, tool_version, "vllm-bench-serve", model, ok=ok, error=error or None, timing=timing,
                        tokens={"prompt": prompt, "output": output}, own=own, concurrency=concurrency))
    if succeeded != completed:
        raise top.refuse(f"{succeeded} entries have no error but completed is {completed}", "errors")
    if output_sum != total_output:
        raise top.refuse(f"output_lens of the completed requests sum to {output_sum}, not {total_output}",
                         "total_output_tokens")
    return rows
