"""`/timelines/?workload=…&model=…&hardware_class=…`: one metric over runtime versions and dates,
with the changes `registry_site.catalogue.timelines` finds enough evidence for."""

from __future__ import annotations

from django.shortcuts import render

from benchpack.reporting.xy_charts import XYPoint, timeline_chart
from registry_site.catalogue import timelines as tl
from registry_site.catalogue.pages.fitted_charts import at_both_widths

# A busy series has thousands of runs: the verdicts are judged over all of them,
# but the chart and table show the newest (5,646 rows rendered took 3.7-8 s and
# 3.7 MB of HTML). The API's `limit` returns more.
CHART_POINTS = 400
TABLE_ROWS = 100


def timeline(request):
    context = {"metrics": tl.METRICS, "params": request.GET, "rules": {"min_prior": tl.MIN_PRIOR,
               "lookback": tl.LOOKBACK, "confirm": tl.CONFIRM, "min_effect": tl.MIN_EFFECT}}
    if not request.GET.get("workload"):
        return render(request, "registry_site/timeline.html", {**context, "series": None})
    try:
        series = tl.Series.from_params(request.GET)
        metric = tl.parse_metric(request.GET.get("metric"))
    except tl.TimelineQueryError as error:
        return render(request, "registry_site/timeline.html", {**context, "series": None, "error": error}, status=400)
    points = tl.points_for(series, metric)
    verdicts = {v.run_id: v for v in tl.detect_changes(points, metric)}
    label, unit, _ = tl.METRICS[metric]
    charted = points[-CHART_POINTS:]
    names = _version_names(charted)
    drawn = [XYPoint(x=p.published_at.timestamp(), y=p.value, label=f"run #{p.run_id}",
                     series=names.get(p.runtime_version) or "unknown", href=f"/runs/{p.run_id}/",
                     flag=_flag(verdicts.get(p.run_id)),
                     detail=verdicts[p.run_id].reason if p.run_id in verdicts else "no value")
             for p in charted]
    # drawn at 640 and at a phone's width, each laid out for its own (issue 32 item 7)
    chart = at_both_widths(lambda width, css_class: timeline_chart(
        drawn, title=f"{label} over time", y_label=label, y_unit=unit, width=width, css_class=css_class))
    rows = [{"point": p, "verdict": verdicts.get(p.run_id)} for p in reversed(points[-TABLE_ROWS:])]
    return render(request, "registry_site/timeline.html", {
        **context, "series": series, "metric": metric, "label": label, "unit": unit, "chart": chart, "rows": rows,
        "total": len(points), "charted": len(charted),
        "versions": tl.by_runtime_version(points),
        "flags": [v for v in verdicts.values() if v.verdict in (tl.REGRESSION, tl.IMPROVEMENT)],
        "other_series": tl.series_of(series.workload_key, limit=50),
    })


def _version_names(points) -> dict[str, str]:
    """Legend names: the runtime version alone when every point has the same runtime name
    ("b6300", not "llama.cpp b6300" three times over, which a phone's legend cannot fit)."""
    labels = {p.runtime_version for p in points if p.runtime_version}
    heads = {label.split(" ", 1)[0] for label in labels}
    if len(heads) == 1 and all(" " in label for label in labels):
        return {label: label.split(" ", 1)[1] for label in labels}
    return {label: label for label in labels}


def _flag(verdict) -> str:
    return verdict.verdict if verdict is not None and verdict.verdict in (tl.REGRESSION, tl.IMPROVEMENT) else ""
