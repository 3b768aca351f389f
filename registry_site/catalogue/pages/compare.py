"""`/compare/?runs=12,15`: 2–4 public runs side by side (registry_site.catalogue.compare)."""

from __future__ import annotations

from django.shortcuts import render

from registry_site.catalogue import compare as catalogue


def compare(request):
    context = {"metrics": catalogue.METRICS, "runs_param": ",".join(request.GET.getlist("runs"))}
    if not request.GET.getlist("runs"):
        return render(request, "registry_site/compare.html", {**context, "error": None, "comparison": None})
    try:
        ids = catalogue.parse_run_ids(request.GET.getlist("runs"))
        comparison = catalogue.compare_published(ids, page=catalogue.parse_page(request.GET.get("page")))
    except catalogue.CompareRequestError as refused:
        return render(request, "registry_site/compare.html", {**context, "error": refused, "comparison": None},
                      status=404 if refused.reason.startswith("no public run") else 400)
    rows = [{"case": line.case, "parity": line.parity, "parity_reason": line.parity_reason,
             "metrics": [{"name": name, "label": label, "better": better,
                          "cells": [_cell(cell, name) for cell in line.cells]}
                         for name, label, better in catalogue.METRICS],
             "counts": line.cells}
            for line in comparison.cases]
    from registry_site.catalogue.models import PublishedRun

    notes = dict(PublishedRun.objects.filter(pk__in=ids).exclude(flag_note="").values_list("pk", "flag_note"))
    return render(request, "registry_site/compare.html",
                  {**context, "error": None, "comparison": comparison, "rows": rows,
                   "flag_notes": [(f"#{pk}", note) for pk, note in notes.items()],
                   "runs_param": ",".join(str(c.run_id) for c in comparison.runs)})


def _cell(cell, name: str) -> dict:
    if not cell.present:
        return {"present": False}
    ratio = cell.ratios.get(name)
    return {"present": True, "value": cell.medians.get(name), "band": cell.bands.get(name), "ratio": ratio}
