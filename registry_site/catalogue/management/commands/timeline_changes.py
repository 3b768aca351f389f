"""`manage.py timeline_changes [--metric decode_rate] [--show 20]`: what change detection flags
across every series of the public catalogue (docs/leaderboards.md, "Change detection")."""

from __future__ import annotations

import time
from collections import Counter

from django.core.management.base import BaseCommand, CommandError

from registry_site.catalogue import timelines


class Command(BaseCommand):
    help = "Run change detection over every timeline series of the public catalogue and summarise the flags."

    def add_arguments(self, parser):
        parser.add_argument("--metric", default=timelines.DEFAULT_METRIC, choices=list(timelines.METRICS))
        parser.add_argument("--show", type=int, default=20, help="list this many flagged changes")

    def handle(self, *args, metric, show, **options):
        if show < 0:
            raise CommandError("--show: must be 0 or more")
        started = time.monotonic()
        series, counts, flagged = timelines.scan(metric)
        self.stdout.write(f"{series} series, {sum(counts.values())} points in {time.monotonic() - started:.1f} s: "
                          + ", ".join(f"{name} {n}" for name, n in counts.items()))
        by_version = Counter((f.series.runtime_name, f.runtime_version, f.verdict.verdict) for f in flagged)
        for (runtime, version, verdict), n in by_version.most_common(10):
            self.stdout.write(f"  {n} × {verdict} at {runtime} {version}")
        for change in flagged[:show]:
            v = change.verdict
            self.stdout.write(f"  run #{v.run_id} {change.series.model} · {change.series.runtime_name} "
                              f"{change.runtime_version} · {change.series.hardware_class}: {v.verdict} "
                              f"({v.change:+.1%}; {v.reason})")
