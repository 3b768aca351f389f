"""Model, runtime and hardware pages: every public result of one entity, and its best system per pack."""

from __future__ import annotations

from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import render

from registry_site.catalogue import leaderboard as lb

KINDS = {"model": ("Models", "model"), "runtime": ("Runtimes", "runtime"), "hardware": ("Hardware classes", "hardware")}
RUNS_PER_PAGE = 50


def entity_index(request, kind: str):
    if kind not in KINDS:
        raise Http404("no such index")
    return render(request, "registry_site/entities/index.html",
                  {"kind": kind, "title": KINDS[kind][0], "items": lb.entities(kind), "column": lb.ENTITY_COLUMNS[kind]})


def entity_page(request, kind: str, value: str):
    if kind not in KINDS:
        raise Http404("no such page")
    runs = lb.entity_runs(kind, value).select_related(None).defer("hardware", "run_metadata")
    if not runs.exists():
        raise Http404("no public results for this name")
    page = Paginator(runs, RUNS_PER_PAGE).get_page(request.GET.get("page"))
    return render(request, "registry_site/entities/page.html", {
        "kind": kind, "value": value, "title": KINDS[kind][0][:-1] if kind != "hardware" else "Hardware class",
        "best": lb.best_per_pack(kind, value),
        "cases": lb.entity_entries(kind, value).exclude(case="")[:200],
        "page": page,
    })
