"""`/systems/<system key>/`: one system (model + runtime + machine) across every pack (issue 32 item 6).

What LocalScore and OpenBenchmarking build their pages around: for one model on one runtime on one
machine, its speed and pass rate on every pack (the whole-pack rows), how it slows with depth (the
depth-lane rows), whether it was reproduced, and its history (the public runs, newest first)."""

from __future__ import annotations

import re

from django.http import Http404
from django.shortcuts import render

from registry_site.catalogue.models import LeaderboardEntry, PublishedRun

_DEPTH = re.compile(r"^(?P<case>.+) @depth=(?P<depth>\d+)$")
HISTORY = 50


def system_page(request, system_key: str):
    entries = list(LeaderboardEntry.objects.filter(system_key=system_key).defer("workload_fields")
                   .order_by("pack_id", "case", "-last_published_at"))
    if not entries:
        raise Http404("no public results for this system")
    packs = [e for e in entries if e.case == ""]
    depth = []
    for e in entries:
        found = _DEPTH.match(e.case)
        if found:
            depth.append({"entry": e, "case": found.group("case"), "depth": int(found.group("depth"))})
    depth.sort(key=lambda d: (d["entry"].pack_id, d["case"], d["depth"]))
    runs = list(PublishedRun.objects.public().filter(system_key=system_key).order_by("-published_at", "-pk")
                .defer("hardware", "run_metadata")[:HISTORY])
    first = packs[0] if packs else entries[0]
    return render(request, "registry_site/systems/page.html", {
        "system": first, "packs": packs, "depth": depth, "runs": runs, "system_key": system_key,
        "reproduced": any(e.reproduced for e in entries), "history_cut": len(runs) == HISTORY,
    })
