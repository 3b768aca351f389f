"""AIPerf `--artifact-dir` files: `profile_export_aiperf.json` (aggregates, `aiperf_version`) and
`profile_export.jsonl` (one record per request). Either may be named; the other is read from beside it.

Definitions (aiperf/metrics/types/*.py, 0.13.0):
- `time_to_first_token`: request start → first content response — Benchpack's `ttft_s`.
- `inter_token_latency = (request_latency − ttft) ÷ (osl − 1)`, request_latency
  ending at the last *content* response (usage-only chunks excluded) —
  Benchpack's `tpot_s`.
- `request_latency` ends at the last content response; Benchpack's `wall_s`
  runs to the response's last byte: kept as `request_latency_ms`.
- `inter_chunk_latency` (per chunk), throughputs, `time_to_second_token`: own names.
Aggregates are numpy percentiles (linear) over the per-request values: the
tests recompute them from the imported rows.
"""

from __future__ import annotations

from pathlib import Path

from benchpack.interop.common import (Imported, ImportRefused, Node, parse_json_text, read_bytes, read_json_lines,
                                      row, sha256)
from benchpack.errors import Problem

TOOL = "aiperf"
AGGREGATE = "profile_export_aiperf.json"
RECORDS = "profile_export.jsonl"
AGREE = {"time_to_first_token": "ttft_s", "inter_token_latency": "tpot_s"}
STATS = ("avg", "p1", "p5", "p10", "p25", "p50", "p75", "p90", "p95", "p99", "min", "max", "std", "count", "sum")
SCHEMA_MAJOR = "1"  # profile_export_aiperf.json schema_version 1.x


def parse(name: str, data: bytes, tool_version: str | None) -> Imported:
    path = Path(name)
    if path.suffix == ".jsonl":
        records_name, records_data = name, data
        aggregate_path = path.with_name(AGGREGATE)
        if not aggregate_path.is_file():
            raise ImportRefused(Problem(str(aggregate_path), "", f"not found beside {path.name}: its aiperf_version "
                                        "and aggregates label the import (import the whole --artifact-dir's files)"))
        aggregate_name, aggregate_data = str(aggregate_path), read_bytes(aggregate_path)
    else:
        aggregate_name, aggregate_data = name, data
        records_path = path.with_name(RECORDS)
        records_name = str(records_path) if records_path.is_file() else None
        records_data = read_bytes(records_path) if records_name else None
    top = Node(aggregate_name, parse_json_text(aggregate_name, aggregate_data)).obj()
    schema = top.text("schema_version", most=16)
    if schema.split(".")[0] != SCHEMA_MAJOR:
        raise top.refuse(f"'{schema}' is not a profile_export_aiperf.json schema this benchpack reads (1.x)",
                         "schema_version")
    version = top.text("aiperf_version", most=64)
    if tool_version is not None and tool_version != version:
        raise top.refuse(f"the file says {version}, not --tool-version {tool_version}", "aiperf_version")
    if top.has("was_cancelled") and top.boolean("was_cancelled"):
        raise top.refuse("the run was cancelled: its figures are not a complete run", "was_cancelled")
    tool_figures, figures = {}, {}
    for key, node in top.entries():
        if not (isinstance(node.value, dict) and "unit" in node.value):
            continue
        unit = node.text("unit", most=64)
        stats = {stat: node.number(stat, minimum=None) for stat in STATS if node.has(stat)}
        if "avg" not in stats:
            raise node.refuse("missing", "avg")
        tool_figures[key] = {"unit": unit, **stats}
        if key in AGREE:
            if unit != "ms":
                raise node.refuse(f"unit '{unit}' is not ms", "unit")
            figures[AGREE[key]] = {"unit": "s", "tool_field": key,
                                   **{stat: (value if stat == "count" else value / 1000.0)
                                      for stat, value in stats.items() if stat != "sum"}}
    if "time_to_first_token" not in tool_figures:
        raise top.refuse("missing: the export has no TTFT (a non-streaming run?)", "time_to_first_token")
    model = None
    config = top.get("input_config", required=False)
    if config is not None and config.has("models"):
        items = config.get("models").get("items", required=False)
        if items is not None and items.items():
            model = items.items()[0].text("name", required=False)
    concurrency = None
    if config is not None and config.has("phases"):
        for phase in config.get("phases").items(most=1000):
            if phase.has("concurrency"):
                concurrency = phase.integer("concurrency", minimum=1, most=1_000_000)
    rows = _rows(records_name, records_data, version, model, concurrency) if records_data else None
    if rows is None:
        rows = [row(TOOL, version, "aiperf-profile", model, ok=True, own={"aggregate_only": True},
                    concurrency=concurrency)]
    else:
        counted = sum(1 for r in rows if r["ok"])
        expected = tool_figures.get("request_count", {}).get("avg")
        if expected is not None and counted != expected:
            raise top.refuse(f"is {expected:g} but {records_name} has {counted} successful profiling records",
                             "request_count.avg")
    return Imported(tool=TOOL, tool_version=version, source_name=name, source_sha256=sha256(data), model=model,
                    rows=rows, figures=figures, tool_figures=tool_figures,
                    settings={"cli_command": top.get("run_info").text("cli_command", most=8192)}
                    if top.has("run_info") and top.get("run_info").has("cli_command") else {},
                    unknown=["hardware", "runtime", "server flags"])


def _metric(metrics: Node, key: str, unit: str) -> float | None:
    node = metrics.get(key, required=False)
    if node is None:
        return None
    node.obj()
    if node.text("unit", most=64) != unit:
        raise node.refuse(f"unit must be {unit}", "unit")
    return node.number("value")


def _rows(name: str, data: bytes, version: str, model: str | None, concurrency: int | None) -> list[dict]:
    rows = []
    for number, value in read_json_lines(name, data):
        record = Node(name, value, f"line {number}").obj()
        metadata = record.get("metadata").obj()
        if (metadata.text("benchmark_phase", required=False) or "profiling") != "profiling":
            continue  # warmup requests are not part of the figures
        metrics = record.get("metrics").obj()
        error = record.get("error", required=False)
        cancelled = metadata.boolean("was_cancelled", required=False)
        ok = (error is None or error.value is None) and not cancelled
        ttft = _metric(metrics, "time_to_first_token", "ms")
        itl = _metric(metrics, "inter_token_latency", "ms")
        latency = _metric(metrics, "request_latency", "ms")
        osl = metrics.get("output_sequence_length", required=False)
        isl = metrics.get("input_sequence_length", required=False)
        timing = {"ttft_s": None if ttft is None else ttft / 1000.0,
                  "tpot_s": None if itl is None else itl / 1000.0} if ok else {}
        rows.append(row(TOOL, version, "aiperf-profile", model, ok=ok,
                        error=None if ok else (str(error.value)[:500] if error is not None and error.value is not None
                                               else "cancelled"),
                        timing=timing,
                        tokens={"prompt": None if isl is None else isl.integer("value"),
                                "output": None if osl is None else osl.integer("value")},
                        own={"request_latency_ms": latency,
                             "x_request_id": metadata.text("x_request_id", required=False)},
                        concurrency=concurrency))
    if not rows:
        raise ImportRefused(Problem(name, "", "holds no profiling records"))
    return rows
