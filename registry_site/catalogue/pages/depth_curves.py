"""`/depth-curves/<pack>/`: prefill and decode rate against context depth, one line per system.

A pack's depth lane publishes one board per level (`short @depth=4096`, each
its own workload key, so no board mixes two depths). This page draws those
boards' medians side by side as rate-vs-depth curves. A line joins only
levels of one pack version, base case and system; a level whose prompt came
from the server's cache (D-013 `cached`) leaves a gap in the prefill curve
instead of a point that would look like a fast prefill.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.http import Http404
from django.shortcuts import render
from benchpack.reporting.charts import Series, line_chart
from registry_site.catalogue.models import LeaderboardEntry
from registry_site.catalogue.pages.fitted_charts import at_both_widths

DEPTH_MARK = " @depth="
# Lines per chart: the systems with the most runs behind their rows (a chart of
# hundreds of lines reads as none).
MAX_SYSTEMS = 8
CURVES = (("prefill_tps", "Prefill rate", "prefill", "tok/s"), ("decode_rate", "Decode rate (1/TPOT)", "decode", "tok/s"))


@dataclass
class Curve:
    label: str
    runs: int = 0
    points: dict[str, dict[int, float | None]] = field(default_factory=dict)  # metric -> depth -> median


def _depth_of(entry: LeaderboardEntry) -> int | None:
    fields = (entry.workload_fields or {}).get("fields") or {}
    depth = fields.get("depth_tokens")
    return depth if isinstance(depth, int) and not isinstance(depth, bool) else None


def curves_of(pack_id: str) -> dict[tuple[str, str], list[Curve]]:
    """{(pack version, base case): curves}, each curve one system's medians per depth, most runs first."""
    entries = (LeaderboardEntry.objects.public().demo_left_out()
               .filter(pack_id=pack_id, case__contains=DEPTH_MARK)
               .only("case", "pack_version", "system_key", "model", "model_quantization", "runtime_name",
                     "runtime_version", "hardware_class", "run_count", "cache_state", "workload_fields",
                     "prefill_tps", "decode_rate", "is_demo"))
    grouped: dict[tuple[str, str], dict[str, Curve]] = {}
    for entry in entries:
        depth = _depth_of(entry)
        if depth is None:
            continue
        base = entry.case.split(DEPTH_MARK, 1)[0]
        label = " · ".join(part for part in (
            f"{entry.model} {entry.model_quantization}".strip(),
            f"{entry.runtime_name} {entry.runtime_version}".strip() or "runtime unknown",
            entry.hardware_class or "hardware unknown") if part) + (" (demo data)" if entry.is_demo else "")
        curve = grouped.setdefault((entry.pack_version, base), {}).setdefault(entry.system_key, Curve(label))
        curve.runs = max(curve.runs, entry.run_count)
        for metric, *_ in CURVES:
            value = getattr(entry, metric)
            if metric == "prefill_tps" and entry.cache_state != "cold":
                value = None  # never a cached prefill on a prefill curve
            curve.points.setdefault(metric, {})[depth] = value
    return {key: sorted(systems.values(), key=lambda c: (-c.runs, c.label))
            for key, systems in sorted(grouped.items())}


def _chart(curves: list[Curve], metric: str, title: str, axis: str, unit: str):
    series = [Series(c.label, sorted(c.points.get(metric, {}).items())) for c in curves]
    return at_both_widths(lambda width, css_class: line_chart(
        series, title=title, x_label="context depth (tokens)", y_label=axis, unit=unit, width=width,
        css_class=css_class))


def depth_curves(request, pack_id: str):
    found = curves_of(pack_id)
    if not found:
        raise Http404("no public depth-lane results for this pack")
    sections = []
    for (version, base), curves in found.items():
        shown = curves[:MAX_SYSTEMS]
        charts = [_chart(shown, metric, f"{title}, {pack_id} {version} · {base}", axis, unit)
                  for metric, title, axis, unit in CURVES]
        sections.append({"version": version, "case": base, "charts": charts, "curves": shown,
                         "left_out": len(curves) - len(shown),
                         "depths": [(d, f"{base}{DEPTH_MARK}{d}") for d in
                                    sorted({d for c in shown for points in c.points.values() for d in points})]})
    return render(request, "registry_site/leaderboards/depth_curves.html",
                  {"pack_id": pack_id, "sections": sections, "max_systems": MAX_SYSTEMS})
