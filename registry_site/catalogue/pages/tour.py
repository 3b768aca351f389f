"""The home page's way in: one link to each thing the catalogue can show, found in the data
(so it points at real results as soon as they exist, and at the demo's until then).

Each finder is one or two indexed queries; a finder with nothing to show returns None and the
home page leaves its line out.
"""

from __future__ import annotations

from urllib.parse import urlencode

from django.db.models import Count, Sum
from django.urls import reverse

from registry_site.catalogue import timelines as tl
from registry_site.catalogue.models import LeaderboardEntry, PublishedRun
from registry_site.catalogue.pages.depth_curves import DEPTH_MARK
from registry_site.catalogue.pages.leaderboards import PER_PAGE, coding_pack_ids


def _biggest_boards(limit: int = 3) -> list[dict]:
    return list(LeaderboardEntry.objects.filter(case="", imported_from="").values("pack_id")
                .annotate(systems=Count("system_key", distinct=True)).order_by("-systems", "pack_id")[:limit])


def _timeline_with_change(candidates: int = 8) -> dict | None:
    """The first of the busiest series whose timeline flags a change (a handful of small queries)."""
    busiest = (LeaderboardEntry.objects.exclude(case="").exclude(hardware_class="")
               .values("workload_key", "model", "hardware_class", "case", "pack_id")
               .annotate(runs=Sum("run_count")).filter(runs__gte=tl.MIN_PRIOR + tl.CONFIRM)
               .order_by("-runs", "workload_key", "model")[:candidates])
    for found in busiest:
        series = tl.Series(found["workload_key"], found["model"], found["hardware_class"])
        points = tl.points_for(series, tl.DEFAULT_METRIC)
        changes = [v for v in tl.detect_changes(points, tl.DEFAULT_METRIC) if v.verdict in (tl.REGRESSION, tl.IMPROVEMENT)]
        if changes:
            return {"href": reverse("timeline") + "?" + urlencode(series.params()), "model": found["model"],
                    "hardware_class": found["hardware_class"], "case": f"{found['pack_id']} · {found['case']}",
                    "verdict": changes[0].verdict}
    return None


def _answer_example() -> str | None:
    coding = LeaderboardEntry.objects.filter(case="", pack_id__in=coding_pack_ids())
    if any(coding.filter(agent_decode_rate__isnull=False).values("pk")[:1]):
        # the coding question as people ask it: an agent decoding at least 20 tok/s that solves 60 % of tasks
        return reverse("answer") + "?" + urlencode({"work": "coding", "min_decode": "20", "min_pass": "60"})
    if any(coding.values("pk")[:1]):
        return reverse("answer") + "?" + urlencode({"work": "coding", "min_pass": "60"})
    first = LeaderboardEntry.objects.filter(case="").values_list("pack_id", flat=True).order_by("pack_id").first()
    return reverse("answer") + "?" + urlencode({"work": first}) if first else None


def tour() -> dict:
    boards = _biggest_boards()
    paged = next((b for b in boards if b["systems"] > PER_PAGE), None)
    depth_pack = (LeaderboardEntry.objects.filter(case__contains=DEPTH_MARK).values_list("pack_id", flat=True)
                  .order_by("pack_id").first())
    concurrency = (PublishedRun.objects.public().filter(cases__case__contains=" @concurrency=")
                   .order_by("-pk").values_list("pk", flat=True).first())
    public = PublishedRun.objects.public().order_by("-pk")
    return {
        "answer": _answer_example(),
        "boards": [b for b in boards if b["systems"] >= 2],
        "paged": paged,
        "coding": any(LeaderboardEntry.objects.filter(case="", pack_id__in=coding_pack_ids(),
                                                       scored__isnull=False).values("pk")[:1]),
        "depth_pack": depth_pack,
        "concurrency_run": concurrency,
        "timeline": _timeline_with_change(),
        "reproduced": public.filter(reproduction_state="reproduced").values_list("pk", flat=True).first(),
        # a re-measurement that does not count (the same owner or the same host: issue 32 item 5), shown as
        # what it is rather than as a reproduction
        "remeasured": public.filter(reproductions__independent=False,
                                    reproductions__reproduction__in=public).values_list("pk", flat=True).first(),
        "flagged": public.exclude(flag_note="").values_list("pk", flat=True).first(),
    }
