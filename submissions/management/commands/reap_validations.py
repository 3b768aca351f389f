"""Hand validations left behind by a dead worker back to the queue.

Celery beat runs the same task every five minutes; this is for operators
and for a deploy step.
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.core.management.base import BaseCommand
from django.utils import timezone

from submissions.models import Submission
from submissions.tasks import reap_stuck_validations


class Command(BaseCommand):
    help = "Re-queue submissions stuck in `validating` longer than SUBMISSION_VALIDATING_TIMEOUT_S."

    def add_arguments(self, parser):
        parser.add_argument("--dry-run", action="store_true", help="list them, change nothing")

    def handle(self, *args, dry_run, **options):
        if dry_run:
            cutoff = timezone.now() - timedelta(seconds=settings.SUBMISSION_VALIDATING_TIMEOUT_S)
            stuck = list(Submission.objects.stuck_validating(cutoff).values_list("pk", "archive_name"))
            stuck += list(Submission.objects.stuck_received(cutoff).values_list("pk", "archive_name"))
            for pk, name in stuck:
                self.stdout.write(f"would requeue {pk} {name}")
            self.stdout.write(f"{len(stuck)} stuck")
            return
        self.stdout.write(f"requeued {reap_stuck_validations()}")
