"""Recompute every leaderboard row from the public runs (and, with --keys, the runs' keys first; with
--suspicious, each case's count of suspicious answers from its stored rows first)."""

from django.core.management.base import BaseCommand
from django.db import transaction


class Command(BaseCommand):
    help = "Rebuild the denormalized leaderboard rows from the public runs."

    def add_arguments(self, parser):
        parser.add_argument("--keys", action="store_true",
                            help="recompute every run's workload and system keys first (after a key-rule change)")
        parser.add_argument("--suspicious", action="store_true",
                            help="recount each case's suspicious answers from its stored rows first")

    def handle(self, *args, keys=False, suspicious=False, **options):
        from registry_site.catalogue.backfill import backfill_keys, backfill_suspicious
        from registry_site.catalogue.leaderboard import rebuild_all
        from registry_site.catalogue.models import PublishedCase, PublishedRow, PublishedRun

        with transaction.atomic():
            if keys:
                backfill_keys(PublishedRun, PublishedCase, PublishedRow, only_missing=False, say=self.stdout.write)
            if suspicious:
                backfill_suspicious(PublishedCase, PublishedRow, say=self.stdout.write)
            count = rebuild_all(say=self.stdout.write)
        self.stdout.write(f"{count} leaderboard rows")
