"""The lanes in compare and report: per-depth rates, per-level concurrency tables, and the rate-vs-depth charts.

Every figure comes from `Comparison.lanes` (benchpack.reporting.compare.lane_figures,
which reads benchpack.lanes.aggregate); nothing is re-derived here.
Charts are SVG (benchpack.reporting.charts.line_chart), written as files next to a
Markdown document by `--charts DIR` and linked from it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Mapping

from benchpack.results.cache_state import CACHED
from benchpack.reporting.charts import Series, line_chart
from benchpack.errors import ConfigError, Problem
from benchpack.reporting.document import Block, Heading, Paragraph, Table, columns
from benchpack.measurement.stats import is_number

LEVEL_NOTE = (
    "Per concurrency level (N requests in flight) or arrival rate (Poisson, seeded): wall time from the first "
    "request sent to the last done; output tok/s and req/s over it; TTFT and TPOT percentiles over ok requests "
    "(p90 from 10, p99 from 100 requests); goodput = share of all requests that were ok and met the pack's SLO. "
    "Energy is measured over the level and divided by its requests. Details: docs/lanes.md."
)
DEPTH_NOTE = (
    "Medians per case and depth of filler context (`depth_tokens`). `cached` means the depth's prompt came from "
    "the server's prompt cache: it has no prefill rate (D-013). `decode` is 1/TPOT."
)


def _num(value: Any, fmt: str) -> str | None:
    return fmt.format(value) if is_number(value) else None


def _ms(values: Mapping) -> str:
    return " / ".join(_num(values.get(k) * 1000, "{:.1f}") if is_number(values.get(k)) else "—"
                      for k in ("p50", "p90", "p99"))


def depth_table(figures: Mapping[str, Mapping]) -> Table:
    table = Table(columns("run", "case", "depth", "prompt tok", "cache", "prefill tok/s", "server prefill",
                          "TTFT s", "TPOT ms", "decode tok/s"))
    for run, lanes in figures.items():
        for case, points in lanes["depth"].items():
            for p in points:
                prefill = "cached" if p["cache_state"] == CACHED else _num(p["prefill_tps"], "{:.1f}")
                table.add(run, case, p["depth_tokens"], _num(p["prompt_tokens"], "{:g}"), p["cache_state"], prefill,
                          _num(p["server_prefill_tps"], "{:.1f}"), _num(p["ttft_s"], "{:.3f}"),
                          _num(p["tpot_s"] * 1000 if is_number(p["tpot_s"]) else None, "{:.1f}"),
                          _num(p["decode_rate"], "{:.1f}"))
    return table


def level_table(figures: Mapping[str, Mapping]) -> Table:
    table = Table(columns("run", "level", "ok/req", "wall s", "out tok/s", "req/s", "TTFT p50/90/99 ms",
                          "TPOT p50/90/99 ms", "goodput", "J/req"))
    for run, lanes in figures.items():
        for a in lanes["levels"]:
            level = f"{int(a['level'])} streams" if a["lane"] == "concurrency" else f"{a['level']:g} req/s"
            table.add(run, level, f"{a['ok']}/{a['requests']}", _num(a["duration_s"], "{:.2f}"),
                      _num(a["output_tps"], "{:.1f}"), _num(a["requests_per_s"], "{:.2f}"), _ms(a["ttft_s"]),
                      _ms(a["tpot_s"]), _num(a["goodput"] * 100 if is_number(a["goodput"]) else None, "{:.0f} %"),
                      _num((a.get("energy") or {}).get("joules_per_request"), "{:.2f}"))
    return table


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-")[:60] or "case"


def depth_charts(figures: Mapping[str, Mapping], width: int = 640, css_class: str = "") -> dict[str, str]:
    """{file name: SVG}: per case, prefill and decode rate against depth, one line per run, drawn `width`
    wide (benchpack.reporting.charts.line_chart)."""
    cases = list(dict.fromkeys(case for lanes in figures.values() for case in lanes["depth"]))
    charts = {}
    for case in cases:
        for metric, title, axis, unit in (("prefill_tps", "prefill", "prefill", "tok/s"),
                                          ("decode_rate", "decode (1/TPOT)", "decode", "tok/s")):
            series = [Series(run, [(p["depth_tokens"], p[metric]) for p in lanes["depth"].get(case, [])])
                      for run, lanes in figures.items() if case in lanes["depth"]]
            charts[f"depth-{_slug(case)}-{metric}.svg"] = line_chart(
                series, title=f"{case}: {title} against context depth", x_label="filler context (tokens)", unit=unit,
                y_label=axis, width=width, css_class=css_class)
    return charts


def write_charts(figures: Mapping[str, Mapping], directory: Path) -> list[Path]:
    try:
        directory.mkdir(parents=True, exist_ok=True)
        written = []
        for name, svg in depth_charts(figures).items():
            (directory / name).write_text(svg + "\n", encoding="utf-8")
            written.append(directory / name)
    except OSError as exc:
        raise ConfigError(Problem(str(directory), "--charts", f"cannot write: {exc.strerror or exc}")) from None
    return written


def lane_blocks(figures: Mapping[str, Mapping], level: int, charts: list[Path] | None = None) -> list[Block]:
    if not figures:
        return []
    blocks: list[Block] = []
    if any(lanes["depth"] for lanes in figures.values()):
        blocks += [Heading("Depth lane", level), depth_table({r: l for r, l in figures.items() if l["depth"]}),
                   Paragraph(DEPTH_NOTE, muted=True)]
        if charts:
            blocks.append(Paragraph("  \n".join(f"![{path.stem}]({path.as_posix()})" for path in charts)))
    if any(lanes["levels"] for lanes in figures.values()):
        blocks += [Heading("Concurrency and rate lanes", level),
                   level_table({r: l for r, l in figures.items() if l["levels"]}), Paragraph(LEVEL_NOTE, muted=True)]
    energy = [(run, lanes["energy"]) for run, lanes in figures.items() if lanes["energy"]["rows"]]
    if energy:
        table = Table(columns("run", "J/request", "tok/J", "J/passed task", "sources", "why null"))
        for run, e in energy:
            sources = ", ".join(f"{s['source']} ({s['interval_s']} s)" if s["interval_s"] else s["source"]
                                for s in e["sources"])
            table.add(run, _num(e["joules_per_request"], "{:.3f}"), _num(e["tokens_per_joule"], "{:.3f}"),
                      _num(e["joules_per_passed_task"], "{:.3f}"), sources or None, e["null_reason"])
        blocks += [Heading("Energy", level), table]
    return blocks
