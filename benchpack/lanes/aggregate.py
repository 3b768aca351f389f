"""Lane figures from result rows: which lane a row belongs to, per-level aggregates, rate-vs-depth curves.

Pure functions over rows (and, for a level's energy, run-metadata.json
`lanes.levels`); compare, report, summary.md and the service read them
from here.

A concurrency level or arrival rate is summarised the way `vllm bench
serve` / GuideLLM users read one: over the level's wall time (first request
sent to last done, from the rows' `load` offsets),

* `output_tps`: output tokens of every ok request / wall time (the server's
  aggregate decode throughput as a client sees it),
* `requests_per_s`: ok requests / wall time,
* TTFT and TPOT p50/p90/p99 over ok requests (`benchpack.measurement.stats.percentiles`:
  p90 from 10 values, p99 from 100),
* `goodput`: the share of *all* requests of the level (failed ones count
  against it) that were ok and met the pack's SLO (`[lanes.slo]`): TTFT ≤
  `ttft_s` and TPOT ≤ `tpot_s`; a reply of one token has no TPOT and meets
  the TPOT part. `goodput_rps` is that many requests per second.

The depth curve is per case and depth: median prefill rate (client and
server), TTFT, TPOT and the decode rate 1/TPOT, with the depth's cache state
(`benchpack.results.cache_state`, D-013): a depth whose rows were served from the
prompt cache has no prefill rate here, only the state `cached`.
"""

from __future__ import annotations

from collections import defaultdict
# The ABCs themselves, not typing's aliases: isinstance() against typing.Mapping goes through typing's
# __instancecheck__ and was most of a level summary's cost (several isinstance checks per row and field).
from collections.abc import Iterable, Mapping
from typing import Any

from benchpack.results.cache_state import CACHED, group_cache_state, server_prefill_tps
from benchpack.measurement.stats import is_number, median, percentiles
from benchpack.results.metrics import decode_rate_of

LANE_FIELDS = (("depth", "depth_tokens"), ("concurrency", "concurrency"), ("rate", "arrival_rate"))


def row_lane(row: Mapping) -> tuple[str, float] | None:
    """(lane, level) for a lane row: ("depth", 4096), ("concurrency", 4), ("rate", 2.0); None for a base row."""
    for lane, key in LANE_FIELDS:
        value = row.get(key)
        if is_number(value):
            return lane, value
    return None


def lane_suffix(lane: tuple[str, float] | None) -> str:
    if lane is None:
        return ""
    kind, level = lane
    if kind == "depth":
        return f" @depth={int(level)}"
    if kind == "concurrency":
        return f" @concurrency={int(level)}"
    return f" @rate={level:g}/s"


def group_label(row: Mapping) -> str:
    """The row's case, plus its lane: `short`, `short @depth=4096`, `short @concurrency=4`, `short @rate=2/s`.

    Compare and report group rows by this label, so a lane's rows are never
    pooled with the base rows or another level's (a 4-stream TTFT is not a
    1-stream TTFT, and a 16k-deep prefill is not a 0-deep one)."""
    return f"{row.get('case')}{lane_suffix(row_lane(row))}"


def slo_from(value: Any) -> Any:
    """An Slo from run-metadata's `lanes.slo` mapping (None when absent or malformed)."""
    from benchpack.packs.lane_spec import Slo

    if not isinstance(value, Mapping):
        return None
    numbers = {k: float(value[k]) for k in ("ttft_s", "tpot_s") if is_number(value.get(k)) and value[k] > 0}
    return Slo(**numbers) if numbers else None


_PATHS: dict[str, tuple[str, ...]] = {}


def _field(row: Mapping, dotted: str) -> Any:
    parts = _PATHS.get(dotted)
    if parts is None:
        parts = _PATHS[dotted] = tuple(dotted.split("."))
    value: Any = row
    for part in parts:
        if type(value) is not dict and not isinstance(value, Mapping):  # rows read from JSON are dicts
            return None
        value = value.get(part)
    return value


def _round(value: Any, digits: int = 4) -> Any:
    return round(value, digits) if is_number(value) else None


# --- concurrency levels and arrival rates --------------------------------------

def _meets(row: Mapping, slo: Any) -> bool:
    if not row.get("ok"):
        return False
    ttft, tpot = _field(row, "timing.ttft_s"), _field(row, "timing.tpot_s")
    output = _field(row, "tokens.output")
    if getattr(slo, "ttft_s", None) is not None and not (is_number(ttft) and ttft <= slo.ttft_s):
        return False
    if getattr(slo, "tpot_s", None) is not None:
        if is_number(tpot):
            return tpot <= slo.tpot_s
        return is_number(output) and output < 2  # one token: no gap to miss
    return True


def _level_energy(levels: Iterable[Mapping] | None, kind: str, level: float) -> Mapping | None:
    for record in levels or ():
        if isinstance(record, Mapping) and record.get("lane") == kind and record.get("level") == level:
            energy = record.get("energy")
            return energy if isinstance(energy, Mapping) else None
    return None


def level_aggregates(rows: Iterable[Mapping], slo: Any = None, levels: Iterable[Mapping] | None = None) -> list[dict]:
    """One aggregate per concurrency level and arrival rate found in `rows`, in lane then level order."""
    groups: dict[tuple[str, float], list[Mapping]] = defaultdict(list)
    for row in rows:
        lane = row_lane(row)
        if lane is not None and lane[0] in ("concurrency", "rate"):
            groups[lane].append(row)
    out = []
    for (kind, level), members in sorted(groups.items(), key=lambda item: (item[0][0], item[0][1])):
        out.append(level_aggregate(kind, level, members, slo, _level_energy(levels, kind, level)))
    return out


def level_aggregate(kind: str, level: float, rows: list[Mapping], slo: Any = None,
                    energy: Mapping | None = None) -> dict:
    ok = [r for r in rows if r.get("ok")]
    sent = [_field(r, "load.sent_offset_s") for r in rows]
    done = [_field(r, "load.done_offset_s") for r in rows]
    sent, done = [v for v in sent if is_number(v)], [v for v in done if is_number(v)]
    duration = max(done) - min(sent) if sent and done and max(done) > min(sent) else None
    output = sum(v for v in (_field(r, "tokens.output") for r in ok) if is_number(v))
    ttft = [_field(r, "timing.ttft_s") for r in ok]
    tpot = [_field(r, "timing.tpot_s") for r in ok]
    server_decode = [_field(r, "backend.predicted_per_second") for r in ok]
    good = sum(1 for r in rows if _meets(r, slo)) if slo is not None else None
    result: dict[str, Any] = {
        "lane": kind,
        "level": level,
        "requests": len(rows),
        "ok": len(ok),
        "failed": len(rows) - len(ok),
        "duration_s": _round(duration),
        "output_tokens": output,
        "output_tps": _round(output / duration) if duration else None,
        "requests_per_s": _round(len(ok) / duration) if duration else None,
        "ttft_s": {k: _round(v, 6) for k, v in percentiles(ttft).items()},
        "tpot_s": {k: _round(v, 6) for k, v in percentiles(tpot).items()},
        # llama-server's own per-request decode rate (timings.predicted_per_second), median.
        "server_decode_tps_median": _round(median(server_decode)),
        "slo": None if slo is None else {"ttft_s": slo.ttft_s, "tpot_s": slo.tpot_s},
        "goodput": _round(good / len(rows)) if good is not None and rows else None,
        "goodput_rps": _round(good / duration) if good is not None and duration else None,
    }
    if kind == "rate":
        late = [_field(r, "load.sent_offset_s") - _field(r, "load.scheduled_offset_s") for r in rows
                if is_number(_field(r, "load.sent_offset_s")) and is_number(_field(r, "load.scheduled_offset_s"))]
        result["send_late_max_s"] = _round(max(late), 6) if late else None
    result["energy"] = _energy_summary(energy, len(rows), output)
    return result


def _energy_summary(energy: Mapping | None, requests: int, output_tokens: int) -> dict:
    """Joules per request and tokens per joule for a level; null with the reason when not measured."""
    joules = energy.get("joules") if isinstance(energy, Mapping) else None
    if not is_number(joules) or joules <= 0:
        reason = (energy or {}).get("null_reason") if isinstance(energy, Mapping) else "not measured"
        return {"joules": None, "joules_per_request": None, "tokens_per_joule": None,
                "scope": (energy or {}).get("scope") if isinstance(energy, Mapping) else None,
                "sources": _sources(energy), "null_reason": reason or "not measured"}
    return {"joules": round(joules, 6), "joules_per_request": round(joules / requests, 6) if requests else None,
            "tokens_per_joule": round(output_tokens / joules, 4), "scope": energy.get("scope"),
            "sources": _sources(energy), "null_reason": None}


def _sources(energy: Mapping | None) -> list[dict]:
    """[{"source", "interval_s"}] of the readings that were counted."""
    readings = energy.get("readings") if isinstance(energy, Mapping) else None
    seen: dict[str, Any] = {}
    for reading in readings or ():
        if isinstance(reading, Mapping) and reading.get("counted"):
            seen.setdefault(str(reading.get("source")), reading.get("interval_s"))
    return [{"source": source, "interval_s": interval} for source, interval in seen.items()]


# --- energy of sequential rows ------------------------------------------------

def energy_summary(rows: Iterable[Mapping]) -> dict:
    """Joules per request, tokens per joule and joules per passed repo task over rows measured one at a time.

    Only rows with their own `energy` count (concurrent levels are measured
    per level); null, with the rows' reason, when no row has joules."""
    measured = [r for r in rows if isinstance(r.get("energy"), Mapping)]
    with_joules = [r for r in measured if is_number(r["energy"].get("joules"))]
    if not with_joules:
        reasons = {r["energy"].get("null_reason") for r in measured if r["energy"].get("null_reason")}
        return {"rows": len(measured), "joules_per_request": None, "tokens_per_joule": None,
                "joules_per_passed_task": None, "sources": [],
                "null_reason": "; ".join(sorted(reasons)) or "no row was measured for energy"}
    joules = [r["energy"]["joules"] for r in with_joules]
    tokens = sum(v for v in (_field(r, "tokens.output") for r in with_joules) if is_number(v))
    repo = [r for r in with_joules if r.get("repo_task") is not None or r.get("sandbox") is not None]
    passed = [r for r in repo if _field(r, "scoring.passed") is True]
    sources: dict[str, Any] = {}
    for row in with_joules:
        for source in _sources(row["energy"]):
            sources.setdefault(source["source"], source["interval_s"])
    return {
        "rows": len(measured),
        "joules_per_request": _round(median(joules), 6),
        "tokens_per_joule": _round(tokens / sum(joules)) if sum(joules) > 0 else None,
        # All the energy the repo-task rows used, divided by the tasks they solved.
        "joules_per_passed_task": _round(sum(r["energy"]["joules"] for r in repo) / len(passed), 6) if passed else None,
        "sources": [{"source": s, "interval_s": i} for s, i in sources.items()],
        "null_reason": None,
    }


# --- depth curves ----------------------------------------------------------------

def depth_curves(rows: Iterable[Mapping]) -> dict[str, list[dict]]:
    """{case: [per-depth point, by depth]} for the depth lane's rows."""
    groups: dict[str, dict[int, list[Mapping]]] = defaultdict(lambda: defaultdict(list))
    for row in rows:
        lane = row_lane(row)
        if lane is not None and lane[0] == "depth":
            groups[str(row.get("case"))][int(lane[1])].append(row)
    curves = {}
    for case, by_depth in groups.items():
        points = []
        for depth in sorted(by_depth):
            members = by_depth[depth]
            ok = [r for r in members if r.get("ok")]
            state = group_cache_state(ok) if ok else None
            tpot = median(_field(r, "timing.tpot_s") for r in ok)
            points.append({
                "depth_tokens": depth,
                "n": len(members),
                "ok": len(ok),
                "prompt_tokens": median(_field(r, "tokens.prompt") for r in ok),
                "cache_state": state,
                # A cached depth has no prefill rate (D-013): the figure would be about the cache.
                "prefill_tps": None if state == CACHED else _round(median(_field(r, "timing.prefill_tps") for r in ok)),
                "server_prefill_tps": _round(median(server_prefill_tps(r) for r in ok)),
                "ttft_s": _round(median(_field(r, "timing.ttft_s") for r in ok), 6),
                "tpot_s": _round(tpot, 6),
                # the metric registry's decode: the median of each row's 1/tpot_s (not 1/median tpot)
                "decode_rate": _round(median(decode_rate_of(r) for r in ok)),
            })
        curves[case] = points
    return curves


# --- summary.md -------------------------------------------------------------------

def _cell(value: Any, fmt: str = "{:.3g}") -> str:
    return "—" if value is None else fmt.format(value)


def _pcts(values: Mapping, scale: float = 1000.0) -> str:
    return " / ".join(_cell(values.get(k) * scale if is_number(values.get(k)) else None, "{:.1f}")
                      for k in ("p50", "p90", "p99"))


def depth_table(curves: Mapping[str, list[Mapping]]) -> list[str]:
    lines = ["| case | depth (tokens) | prompt tokens | cache | prefill tok/s (client / server) | TTFT (s) | TPOT (ms) | decode tok/s |",
             "|---|---|---|---|---|---|---|---|"]
    for case, points in curves.items():
        for p in points:
            prefill = "cached" if p["cache_state"] == CACHED else _cell(p["prefill_tps"], "{:.1f}")
            lines.append(f"| {case} | {p['depth_tokens']} | {_cell(p['prompt_tokens'], '{:g}')} | {p['cache_state'] or '—'} | "
                         f"{prefill} / {_cell(p['server_prefill_tps'], '{:.1f}')} | {_cell(p['ttft_s'], '{:.3f}')} | "
                         f"{_cell(p['tpot_s'] * 1000 if is_number(p['tpot_s']) else None, '{:.1f}')} | "
                         f"{_cell(p['decode_rate'], '{:.1f}')} |")
    return lines


def level_table(aggregates: list[Mapping]) -> list[str]:
    lines = ["| lane | level | requests (ok) | wall (s) | output tok/s | req/s | TTFT p50 / p90 / p99 (ms) | "
             "TPOT p50 / p90 / p99 (ms) | goodput | J / request | tok / J |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for a in aggregates:
        level = f"{int(a['level'])} streams" if a["lane"] == "concurrency" else f"{a['level']:g} req/s"
        goodput = _cell(a["goodput"] * 100 if is_number(a["goodput"]) else None, "{:.0f} %")
        energy = a.get("energy") or {}
        lines.append(f"| {a['lane']} | {level} | {a['requests']} ({a['ok']}) | {_cell(a['duration_s'], '{:.2f}')} | "
                     f"{_cell(a['output_tps'], '{:.1f}')} | {_cell(a['requests_per_s'], '{:.2f}')} | "
                     f"{_pcts(a['ttft_s'])} | {_pcts(a['tpot_s'])} | {goodput} | "
                     f"{_cell(energy.get('joules_per_request'), '{:.2f}')} | {_cell(energy.get('tokens_per_joule'), '{:.2f}')} |")
    return lines


def markdown_sections(rows: list[Mapping], slo: Any = None, levels: Iterable[Mapping] | None = None) -> list[str]:
    sections = []
    curves = depth_curves(rows)
    if curves:
        sections.append("\n".join(["## Depth lane", "",
                                   "Medians per case and depth of filler context; a `cached` depth has no prefill rate.",
                                   "", *depth_table(curves)]))
    aggregates = level_aggregates(rows, slo, levels)
    if aggregates:
        slo_text = ("goodput: share of requests with " + " and ".join(
            f"{name} ≤ {value:g} s" for name, value in (("TTFT", getattr(slo, "ttft_s", None)),
                                                        ("TPOT", getattr(slo, "tpot_s", None))) if value is not None)
            if slo is not None else "no SLO declared: no goodput")
        sections.append("\n".join(["## Concurrency and rate lanes", "", slo_text + ".", "", *level_table(aggregates)]))
    energy = energy_summary(rows)
    if energy["rows"]:
        if energy["null_reason"]:
            sections.append(f"## Energy\n\nNot measured: {energy['null_reason']}.")
        else:
            sources = ", ".join(f"{s['source']} (every {s['interval_s']} s)" if s["interval_s"] else s["source"]
                                for s in energy["sources"])
            sections.append("\n".join([
                "## Energy", "", f"Sources: {sources}.", "",
                f"- joules per request (median): {_cell(energy['joules_per_request'], '{:.3f}')}",
                f"- output tokens per joule: {_cell(energy['tokens_per_joule'], '{:.3f}')}",
                f"- joules per passed repo task: {_cell(energy['joules_per_passed_task'], '{:.3f}')}",
            ]))
    return sections
