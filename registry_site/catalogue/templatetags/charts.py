"""Template tags that draw `benchpack.reporting.charts` SVG charts from catalogue objects.

`{% load charts %}` then:
- `{% case_spread_chart run.rows.all "decode_rate" title="…" unit="tok/s" %}`:
  per-case median bars with min–max whiskers over a published run's ok rows.
- `{% submission_vs_approved_chart comparison similar "decode_rate" title="…" unit="tok/s" %}`:
  per case, this submission's medians next to approved results with the same fingerprint.

The SVG is built from escaped text by benchpack.reporting.charts, so it is marked safe here.
Both default to a 560-unit-wide viewBox: two fit side by side on the site's
72rem page at about their natural text size. Each is drawn a second time at a
phone's width (benchpack.reporting.charts.PHONE_WIDTH; pages/fitted_charts.py), and
the stylesheet shows the drawing made for the screen (issue 32 item 7).
"""

from __future__ import annotations

from django import template
from benchpack.reporting import charts
from registry_site.catalogue.pages.fitted_charts import FITTED, pair

register = template.Library()

THIS_SUBMISSION = "this submission"
APPROVED = "approved, same fingerprint"


@register.simple_tag
def case_spread_chart(rows, path: str, title: str, unit: str = "", width: int = 560):
    """`rows`: PublishedRow objects (their `raw` run.jsonl row) or plain row dicts."""
    raw_rows = [r.raw if hasattr(r, "raw") else r for r in rows]
    bars = charts.case_spread_bars(raw_rows, path)
    if not bars:
        return ""
    return pair(charts.bar_chart(bars, title=title, unit=unit, width=width),
                charts.bar_chart(bars, title=title, unit=unit, width=charts.PHONE_WIDTH, css_class=FITTED))


@register.simple_tag
def submission_vs_approved_chart(comparison, similar, metric: str, title: str, unit: str = "", width: int = 560):
    """`comparison`: benchpack.reporting.compare.Comparison; `similar`: the review view's dicts
    (run, case, approved: PublishedCase items); `metric`: a PublishedCase field that
    is also a `CaseStats.medians` key (decode_rate, ttft_s, wall_s, tpot_s, total_tps)."""
    if comparison is None or not comparison.cases:
        return ""
    approved: dict[str, dict] = {}
    for item in similar or ():
        for published in item["approved"]:
            # Two runs of one submission may match the same approved case; draw it once.
            approved.setdefault(item["case"], {}).setdefault(published.pk, (item["run"], published))
    groups = []
    for case in comparison.cases:
        bars = [
            charts.Bar(s.run, s.medians.get(metric), series=THIS_SUBMISSION, detail=f"{s.ok}/{s.n} rows ok")
            for s in case.runs
            if s.present
        ]
        for matched_run, published in approved.get(case.case, {}).values():
            run = published.run
            bars.append(charts.Bar(
                f"#{run.pk} {run.model}",
                getattr(published, metric, None),
                series=APPROVED,
                detail=f"{run.label} · {run.hardware_class or 'hardware not recorded'} · same fingerprint as {matched_run}",
            ))
        groups.append(charts.Group(case.case, bars))
    return pair(charts.grouped_bar_chart(groups, title=title, unit=unit, width=width),
                charts.grouped_bar_chart(groups, title=title, unit=unit, width=charts.PHONE_WIDTH, css_class=FITTED))


@register.filter
def decode_rate(row):
    """1/tpot_s of a row (a run.jsonl dict, or an object with a `raw` one): the decode figure
    of benchpack.results.metrics, so a live table shows what the run page and boards show."""
    from benchpack.results.metrics import decode_rate_of

    raw = row.raw if hasattr(row, "raw") else row
    return decode_rate_of(raw) if isinstance(raw, dict) else None
