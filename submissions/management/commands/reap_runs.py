"""Recover run requests whose worker went silent (retry or fail), and send requests
whose message never left. Beat runs the same every minute, and every runner
worker does it for its own host; this is for operators and deploy steps."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.core.management.base import BaseCommand
from django.utils import timezone

from submissions.runqueue.models import RunRequest
from submissions.runqueue.recovery import recover_lost_runs


class Command(BaseCommand):
    help = ("Retry or fail run requests without a heartbeat for RUN_HEARTBEAT_TIMEOUT_S; send unsent ones, re-send "
            "ones an online idle host did not take, end ones no worker can take (docs/runner-hosts.md)")

    def add_arguments(self, parser):
        parser.add_argument("--dry-run", action="store_true", help="list them, change nothing")

    def handle(self, *args, dry_run, **options):
        if dry_run:
            now = timezone.now()
            silent = RunRequest.objects.silent_runs(now - timedelta(seconds=settings.RUN_HEARTBEAT_TIMEOUT_S))
            unsent = RunRequest.objects.never_sent(now - timedelta(seconds=5))
            for request in [*silent, *unsent]:
                self.stdout.write(f"would recover {request.pk} {request.state} on {request.host_id and request.host.name} "
                                  f"(claimed by {request.claimed_by or 'nobody'}, attempt {request.attempts} of {request.max_attempts})")
            return
        for request_id, outcome in recover_lost_runs():
            self.stdout.write(f"{request_id}: {outcome}")
