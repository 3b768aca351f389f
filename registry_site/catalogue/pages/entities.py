"""Model, runtime and hardware pages: every public result of one entity, and its best system per pack."""

from __future__ import annotations

from django.http import Http404
from django.shortcuts import render

from registry_site.catalogue import leaderboard as lb
from registry_site.catalogue.views import case_sum

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
    number = request.GET.get("page") or "1"
    if not number.isdigit() or int(number) < 1:
        raise Http404("no such page")
    number = int(number)
    # No COUNT: a popular model has ~100k runs and counting them took most of a second.
    # One row past the page says whether there is a next one.
    start = (number - 1) * RUNS_PER_PAGE
    # Newest first by id (publication order: runs are inserted when approved), which walks the primary key
    # backwards; ordering by published_at sorted all of a popular model's runs first (~0.4 s at 1M rows).
    runs = list(lb.entity_runs(kind, value).order_by("-pk").defer("hardware", "run_metadata")
                .annotate(correct=case_sum("passed_rows"), scored=case_sum("scored_rows"))  # beside answered
                [start:start + RUNS_PER_PAGE + 1])
    if not runs and number == 1:
        raise Http404("no public results for this name")
    page = {"object_list": runs[:RUNS_PER_PAGE], "number": number, "has_next": len(runs) > RUNS_PER_PAGE,
            "has_previous": number > 1}
    return render(request, "registry_site/entities/page.html", {
        "kind": kind, "value": value, "title": KINDS[kind][0][:-1] if kind != "hardware" else "Hardware class",
        "best": lb.best_per_pack(kind, value),
        "cases": lb.entity_entries(kind, value).exclude(case="")[:200],
        "page": page,
    })
