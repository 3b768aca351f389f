"""A run's lane sections (depth curves, concurrency and rate levels, energy) as the pages show them.

Shared by the public run page and the operator's review page (submissions.views):
it lives in the catalogue, the lower of the two apps.
"""

from __future__ import annotations

from benchpack.reporting.charts import PHONE_WIDTH
from registry_site.catalogue.pages.fitted_charts import FITTED, WIDE, at_both_widths, pair


def level_charts(label: str, levels: list[dict]) -> list[str]:
    """Output rate against load, one chart per lane (concurrency: streams in flight; rate: requests/s),
    each drawn at the desktop's and a phone's width (fitted_charts)."""
    from benchpack.reporting.charts import Series, line_chart

    charts = []
    for lane, x_label in (("concurrency", "streams in flight"), ("rate", "requests per second offered")):
        points = [(level["level"], level.get("output_tps")) for level in levels if level.get("lane") == lane]
        if points:
            charts.append(at_both_widths(lambda width, css_class: line_chart(
                [Series(label, points)], title=f"Output rate against {x_label}", x_label=x_label,
                y_label="output rate", unit="tok/s", width=width, css_class=css_class)))
    return charts


def lane_sections(results) -> list[dict]:
    """What the review page shows of each run's lanes (docs/lanes.md): the depth curves as tables and
    rate-vs-depth charts, the per-level concurrency / rate aggregates with goodput, and energy.

    From every row of the run, not the page of cases shown above: a level's
    aggregate needs all of its requests. The charts are benchpack.reporting.charts
    SVG (every label escaped there, no style attribute: the CSP allows them inline).
    """
    from benchpack.reporting.compare import lane_figures
    from benchpack.reporting.lanes import depth_charts

    sections = []
    for result in results:
        figures = lane_figures(result)
        if not (figures["depth"] or figures["levels"]):
            continue
        label = result.path.name
        for level in figures["levels"]:
            level["ttft_ms"] = {k: v * 1000 for k, v in level["ttft_s"].items()}
            level["tpot_ms"] = {k: v * 1000 for k, v in level["tpot_s"].items()}
            level["goodput_pct"] = None if level["goodput"] is None else level["goodput"] * 100
        sections.append({
            "run": label,
            "depth": [{"case": case, "points": points} for case, points in figures["depth"].items()],
            "levels": figures["levels"],
            "energy": figures["energy"],
            "charts": [pair(wide, phone) for wide, phone in zip(
                depth_charts({label: figures}, WIDE).values(),
                depth_charts({label: figures}, PHONE_WIDTH, FITTED).values())],
            "level_charts": level_charts(label, figures["levels"]),
        })
    return sections
