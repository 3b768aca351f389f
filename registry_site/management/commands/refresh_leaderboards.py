"""`manage.py refresh_leaderboards [--processes N]`: rewrite every leaderboard row of the catalogue in bounded memory.

One system at a time, each in its own transaction, as an import's end-of-import refresh does
(`leaderboard.refresh_systems`): memory holds one system's case rows, never the catalogue's, and a
progress line says how far it is at least every 30 s. Rows of systems without a public run are deleted first; the
run list's precomputed counts are rebuilt last (`run_counts.rebuild`, once, whatever the number of processes).
`--processes N` (PostgreSQL) forks N processes, each a share of the systems (a system's rows are written by
one process). `rebuild_leaderboards` does the same work in one transaction holding every run in memory
(~1 GB per million case rows). docs/leaderboards.md, "Refreshing every row".
"""

from __future__ import annotations

import time

from django.core.management.base import BaseCommand, CommandError


class Command(BaseCommand):
    help = ("Rewrite every leaderboard row from the public runs, one system at a time in its own transaction "
            "(memory: one system's case rows), saying progress.")

    def add_arguments(self, parser):
        parser.add_argument("--processes", type=int, default=1,
                            help="refreshing processes side by side (PostgreSQL only; default 1), each a share "
                                 "of the systems")

    def handle(self, *args, processes: int = 1, **options):
        from django.db import connection

        from registry_site.catalogue import leaderboard, run_counts

        if processes < 1:
            raise CommandError("--processes must be at least 1")
        if processes > 1 and connection.vendor != "postgresql":
            raise CommandError("--processes above 1 needs PostgreSQL: SQLite has one writer at a time")
        started = time.monotonic()
        say = self.stdout.write
        systems = leaderboard.public_systems()
        gone = leaderboard.delete_entries_of_other_systems(systems)
        say(f"refreshing the leaderboard rows of {len(systems):,} systems in {processes} "
            f"process{'es' if processes > 1 else ''} ({gone:,} rows of systems without a public run deleted)")
        if processes == 1:
            results = [leaderboard.refresh_systems(systems, say=say)]
        else:
            results = _in_processes(systems, processes)
            run_counts.rebuild()  # once, here: each process's share leaves the run list's counts alone
        written, read = (sum(column) for column in zip(*results))
        say(f"{written:,} leaderboard rows from {read:,} case rows of {len(systems):,} systems "
            f"refreshed in {time.monotonic() - started:.0f} s")


def _in_processes(systems: list[str], processes: int) -> list[tuple[int, int]]:
    """Each forked process refreshes every `processes`-th system; their (rows written, case rows read)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from registry_site.management.commands.seed_catalogue import _close_connections

    _close_connections()  # a child opens its own connection, never the parent's socket
    shares = [systems[share::processes] for share in range(processes)]
    with ProcessPoolExecutor(processes, mp_context=multiprocessing.get_context("fork")) as pool:
        return list(pool.map(_refresh_share, shares, range(1, processes + 1)))


def _refresh_share(systems: list[str], number: int) -> tuple[int, int]:
    from registry_site.catalogue import leaderboard

    return leaderboard.refresh_systems(systems, say=lambda text: print(f"[process {number}]{text}", flush=True),
                                       counts=False)
