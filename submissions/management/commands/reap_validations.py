"""Hand validations left behind by a dead worker back to the queue.

Celery beat runs the same task every SUBMISSION_REAPER_INTERVAL_S; this is for operators
and for a deploy step.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand

from submissions.tasks import reap_stuck_validations, reaper_candidates


class Command(BaseCommand):
    help = ("Re-queue validations whose worker went silent (SUBMISSION_HEARTBEAT_TIMEOUT_S) and uploads "
            "whose validation message never reached the broker or was lost.")

    def add_arguments(self, parser):
        parser.add_argument("--dry-run", action="store_true", help="list them, change nothing")

    def handle(self, *args, dry_run, **options):
        if dry_run:
            stuck = 0
            for kind, queryset in reaper_candidates().items():
                for pk, name in queryset.values_list("pk", "archive_name"):
                    self.stdout.write(f"would requeue {pk} {name} ({kind})")
                    stuck += 1
            self.stdout.write(f"{stuck} stuck")
            return
        self.stdout.write(f"requeued {reap_stuck_validations()}")
