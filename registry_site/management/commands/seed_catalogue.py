"""`manage.py seed_catalogue --cases N [--dry-run] [--bulk]`: a synthetic, labelled catalogue for scale tests.

What it writes and why it is safe to tell apart from real data:
registry_site/catalogue/synthetic.py.

By default every run goes through the service's publishing path: each batch
of runs becomes one `Publication` per synthetic submission (system), rows
as the row contract decodes them from JSON lines, handed to
`registry_site.catalogue.publishing.publish` — the call an approval makes —
which derives the keys, fingerprints, plausibility verdicts and case medians
itself. One transaction per batch; the leaderboard rows of every touched
(workload, system) pair are refreshed once at the end, one system at a time
(`leaderboard.refresh_pairs`), after an ANALYZE of the filled tables (the
planner's "empty" statistics made the refresh 16x slower). On PostgreSQL
`publish` writes with COPY. Memory is bounded by a batch (`--batch-runs`) and
one system's case rows, not by the catalogue (docs/leaderboards.md, "10M
case rows on PostgreSQL", "Import").

`--processes N` (PostgreSQL) runs that in N forked processes side by side, each
publishing and then refreshing the runs of its own systems; the same runs,
values and batches as one process (`_Import`).

`--defer-indexes` (PostgreSQL, an empty catalogue) is the bulk-load mode: the run, case and raw row
tables' secondary indexes and foreign keys are dropped before publishing and built once after it
(`registry_site.catalogue.deferred_indexes`); the same rows are stored. Each dropped definition is recorded in
the database in the transaction that drops it and forgotten in the one that builds it back: an import killed in
between leaves them recorded, and `--restore-indexes` builds them back (so does any later `seed_catalogue`,
first thing; `manage.py check --database default` warns meanwhile).

`--bulk` writes the plan's precomputed values with executemany in one
transaction and rebuilds every leaderboard row with `rebuild_all` (faster,
memory grows with the catalogue: ~1 GB per million case rows).
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import resource
import time
from collections import defaultdict
from pathlib import PurePosixPath

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from django.utils import timezone

BATCH_RUNS = 5000
# Seconds to pause right after --defer-indexes has dropped (tests kill the command there).
PAUSE_AFTER_DROP = "BENCHPACK_SEED_PAUSE_AFTER_DROP"


SYNTHETIC_PLAUSIBILITY = {"verdict": {"status": "unchecked", "reason": "synthetic catalogue data: made-up figures",
                                      "factor": None, "figure": None}, "rows": {}}


class Command(BaseCommand):
    help = "Seed a synthetic, clearly labelled catalogue (demo data) of N published case rows for scale tests."

    def add_arguments(self, parser):
        parser.add_argument("--cases", type=int, default=1_000_000, help="published case rows to create (default 1M)")
        parser.add_argument("--systems", type=int, default=300, help="distinct systems (default 300)")
        parser.add_argument("--rows-per-case", type=int, default=1, help="raw rows stored per case (default 1)")
        parser.add_argument("--seed", type=int, default=10, help="random seed (same seed, same catalogue)")
        parser.add_argument("--batch-runs", type=int, default=BATCH_RUNS,
                            help=f"runs per transaction of the publishing path (default {BATCH_RUNS}): memory holds one "
                                 "batch; a batch is one publication per system, so larger batches mean fewer, "
                                 "larger publications")
        parser.add_argument("--processes", type=int, default=1,
                            help="importing processes side by side (PostgreSQL only; default 1): each publishes "
                                 "and then refreshes the runs of its own systems")
        parser.add_argument("--defer-indexes", action="store_true",
                            help="bulk-load mode (PostgreSQL, an empty catalogue only): drop the run, case and raw "
                                 "row tables' secondary indexes and foreign keys before publishing and build them "
                                 "once after it (registry_site/catalogue/deferred_indexes.py)")
        parser.add_argument("--restore-indexes", action="store_true",
                            help="only build back the indexes and foreign keys an interrupted --defer-indexes "
                                 "import left dropped (recorded in the database), then stop; every other run of "
                                 "this command does that first too")
        parser.add_argument("--dry-run", action="store_true", help="say what would be created; write nothing")
        parser.add_argument("--bulk", action="store_true",
                            help="executemany + rebuild_all in one transaction instead of the publishing path "
                                 "(faster; memory grows with the catalogue)")

    def handle(self, *args, cases, systems, rows_per_case, seed, dry_run, bulk=False, batch_runs=BATCH_RUNS,
               processes=1, defer_indexes=False, restore_indexes=False, **options):
        from registry_site.catalogue import deferred_indexes, synthetic

        if cases < 1 or systems < 1 or rows_per_case < 0:
            raise CommandError("--cases and --systems must be 1 or more, --rows-per-case 0 or more")
        if batch_runs < 1:
            raise CommandError("--batch-runs must be 1 or more")
        if processes < 1 or (processes > 1 and bulk):
            raise CommandError("--processes must be 1 or more, and 1 with --bulk (one transaction)")
        if rows_per_case < 1 and not bulk:
            raise CommandError("--rows-per-case 0 needs --bulk: the publishing path derives a case from its rows")
        if defer_indexes and bulk:
            raise CommandError("--defer-indexes is a mode of the publishing path, not of --bulk")
        if restore_indexes or not dry_run:
            # Before anything else is read or written (the arguments checked first): a catalogue left without
            # indexes by a killed --defer-indexes import gets them back whatever is asked next (and a new
            # import is not slowed, nor its pages, by their lack).
            restored = deferred_indexes.restore_recorded(workers=max(1, processes), say=self.stdout.write)
            if restore_indexes:
                self.stdout.write(f"restored {restored} index and foreign key definitions" if restored
                                  else "nothing to restore: no index or foreign key is recorded as dropped")
                return
        started = time.monotonic()
        plan = synthetic.plan(cases, systems, rows_per_case, seed)
        for line in plan.describe():
            self.stdout.write(line)
        if dry_run:
            self.stdout.write("dry run: nothing written")
            return
        if bulk:
            with transaction.atomic():
                created = self._write(plan)
        else:
            created = self._publish(plan, started, batch_runs, processes, defer_indexes)
        self.stdout.write(f"seeded {created['runs']:,} runs, {created['cases']:,} case rows, "
                          f"{created['entries']:,} leaderboard rows in {time.monotonic() - started:.0f} s; "
                          f"peak RSS {_peak_rss_mb():,.0f} MB" + (f" a process ({processes} processes)"
                                                                  if processes > 1 else ""))

    def _submissions(self, plan) -> dict:
        from registry_site.catalogue import synthetic
        from registry_site.demo_data import ensure_submitter
        from submissions import states
        from submissions.models import Submission

        user = ensure_submitter(synthetic.SYNTHETIC_SUBMITTER)
        submissions = {}
        for system in plan.systems:
            digest = hashlib.sha256(f"synthetic-{plan.seed}-{system.key.digest}".encode()).hexdigest()
            submissions[system.index], _ = Submission.objects.get_or_create(
                archive_sha256=digest,
                defaults={"submitter": user, "state": states.APPROVED, "archive_name": "synthetic-catalogue",
                          "archive_size": 0, "archive": b"", "provenance": "self-reported", "is_demo": True,
                          "decision_reason": synthetic.NOTE})
        return submissions

    def _publish(self, plan, started: float, batch_runs: int = BATCH_RUNS, processes: int = 1,
                 defer_indexes: bool = False) -> dict:
        """Every run through `publishing.publish`, a batch per transaction; leaderboard rows at the end.

        With `processes` > 1 (PostgreSQL only), that many forked processes publish side by side, each the
        runs of its own systems (system index modulo `processes`), and then refresh those systems'
        leaderboard rows: `publish` is per submission and transactional, a synthetic submission is one
        system, and a (workload, system) pair's rows are written by the one process owning the system.
        Every process draws the whole plan's random numbers in order (cheap: ~0.05 ms a run) and keeps
        its own runs, so each run gets exactly the values, label and batch it gets with one process.

        `defer_indexes`: the bulk-load mode (deferred_indexes): the secondary indexes and foreign keys of the
        run, case and raw row tables are dropped before publishing and built again before the refresh
        (which reads through them) — also when publishing fails.
        """
        from django.db import connection

        from registry_site.catalogue import deferred_indexes
        from registry_site.catalogue.models import LeaderboardEntry, PublishedCase, PublishedRow, PublishedRun

        filled = (PublishedRun, PublishedCase, PublishedRow)
        if defer_indexes:
            if connection.vendor != "postgresql":
                raise CommandError("--defer-indexes needs PostgreSQL")
            if not deferred_indexes.empty(filled):
                raise CommandError("--defer-indexes is for an empty catalogue: the catalogue already has runs, "
                                   "whose pages would go without their indexes for the length of the import")
        submission_ids = {index: s.pk for index, s in self._submissions(plan).items()}
        # Labels are unique per submission: a second seed into the same database numbers on from the first.
        offset = PublishedRun.objects.filter(label__startswith="synthetic-").count()
        # Into an empty catalogue with its indexes deferred, the pairs an import touched are all the catalogue's
        # pairs: read once after the rebuild, not a batch at a time (without the case table's run index, each
        # batch's read-back scanned every case row: ~1 min a batch at 9M case rows, stop 42's 10M import).
        job = _Import(plan, submission_ids, offset, timezone.now(), batch_runs, processes,
                      pairs_after=defer_indexes)
        say = self.stdout.write
        deferred = deferred_indexes.drop(filled) if defer_indexes else None
        if deferred is not None and os.environ.get(PAUSE_AFTER_DROP):
            # The tests' hook: a fixed point between the drop and the rebuild at which to kill the command.
            say(f"  dropped {len(deferred.statements())} definitions; pausing ({PAUSE_AFTER_DROP})")
            self.stdout.flush()
            time.sleep(float(os.environ[PAUSE_AFTER_DROP]))
        try:
            published = self._publish_shares(job, plan, started, processes)
        finally:
            if deferred is not None:
                _close_connections()
                say(f"  building {len(deferred.indexes)} indexes and {len(deferred.constraints)} foreign keys "
                    "deferred by --defer-indexes")
                deferred_indexes.restore(deferred, workers=processes, say=say)
        refreshed = time.monotonic()
        # Once, after every process has written: the refresh's plans need the filled tables.
        _analyze(vacuum_runs=defer_indexes)
        if job.pairs_after:
            published = [_catalogue_pairs()]
        if processes == 1:
            from registry_site.catalogue import leaderboard

            case_pairs, pack_pairs = published[0]
            leaderboard.refresh_pairs(case_pairs, pack_pairs, say=say)
            pairs = len(case_pairs) + len(pack_pairs)
        else:
            case_pairs = set().union(*(cases for cases, _ in published))
            pack_pairs = set().union(*(packs for _, packs in published))
            _close_connections()
            job.pairs = (case_pairs, pack_pairs)
            pairs = sum(self._in_processes(job, "refresh", started))
            from registry_site.catalogue import run_counts

            run_counts.rebuild()  # once, here: each share's refresh leaves the run list's counts alone
        counts = {"runs": job.progress[0], "cases": job.progress[1],
                  "entries": LeaderboardEntry.objects.count()}
        say(f"  leaderboard rows of {pairs:,} pairs refreshed in {time.monotonic() - refreshed:.0f} s")
        return counts

    def _publish_shares(self, job: "_Import", plan, started: float, processes: int) -> list:
        """Publish every run, in this process or in `processes` forked ones; each share's touched pairs."""
        from django.db import connection

        if processes == 1:
            last_said = [time.monotonic()]

            def tick(runs, cases, total=job.progress):
                total[0] += runs
                total[1] += cases
                if time.monotonic() - last_said[0] > 20 or total[0] == plan.runs:
                    last_said[0] = time.monotonic()
                    self._say_progress(total[0], total[1], started)

            return [job.publish_share(0, tick)]
        if connection.vendor != "postgresql":
            raise CommandError("--processes above 1 needs PostgreSQL: SQLite has one writer at a time")
        _close_connections()
        return self._in_processes(job, "publish", started)

    def _say_progress(self, runs: int, cases: int, started: float, rss: bool = True) -> None:
        """`rss`: only with one process (the others' memory is not this process's to read)."""
        elapsed = time.monotonic() - started
        self.stdout.write(f"  {runs:,} runs, {cases:,} case rows, {cases / elapsed:,.0f} case rows/s"
                          + (f", peak RSS {_peak_rss_mb():,.0f} MB" if rss else ""))

    def _in_processes(self, job: "_Import", phase: str, started: float) -> list:
        """Run one phase in `job.processes` forked processes; their answers in share order. A failure in
        one stops nothing already running (each batch is its own transaction, as with one process) and is
        raised here once all have ended."""
        import multiprocessing
        from concurrent.futures import FIRST_EXCEPTION, ProcessPoolExecutor, wait

        global _JOB
        _JOB = job  # inherited by the forked children: the plan is never pickled
        context = multiprocessing.get_context("fork")
        job.shared = context.Array("q", 2)  # runs and case rows published, summed over the processes
        with ProcessPoolExecutor(job.processes, mp_context=context) as pool:
            futures = [pool.submit(_run_share, phase, share) for share in range(job.processes)]
            pending = set(futures)
            while pending:
                done, pending = wait(pending, timeout=20, return_when=FIRST_EXCEPTION)
                if phase == "publish":
                    with job.shared.get_lock():
                        runs, cases = job.shared[0], job.shared[1]
                    self._say_progress(runs, cases, started, rss=False)
                if any(f.exception() for f in done):
                    break
            results = [f.result() for f in futures]  # raises the first failure after the others end
        if phase == "publish":
            job.progress = [job.shared[0], job.shared[1]]
        return results

    def _write(self, plan) -> dict:
        from django.db.models import Max

        from registry_site.catalogue import leaderboard, synthetic
        from registry_site.catalogue.models import PublishedCase, PublishedRow, PublishedRun

        submissions = self._submissions(plan)
        rng = random.Random(plan.seed)
        now = timezone.now()
        next_id = (PublishedRun.objects.aggregate(top=Max("id"))["top"] or 0) + 1
        runs = Inserter(PublishedRun, shared_json=("hardware", "run_metadata", "system_fields"))
        cases = Inserter(PublishedCase, shared_json=("workload_fields", "fingerprint_fields"))
        rows = Inserter(PublishedRow)
        per_system = {}  # what every run of one system shares, encoded once
        counts = {"runs": 0, "cases": 0}
        for start in range(0, plan.runs, BATCH_RUNS):
            batch_runs, batch_cases, batch_rows = [], [], []
            for number in range(start, min(plan.runs, start + BATCH_RUNS)):
                values = synthetic.run_values(plan, number, rng, now)
                run_id = next_id + number
                batch_runs.append(self._run(values, run_id, submissions, per_system))
                batch_cases.extend({**case, "run_id": run_id} for case in values.cases)
                if plan.rows_per_case:
                    batch_rows.extend({**row, "run_id": run_id} for row in values.rows)
            runs.insert(batch_runs)
            cases.insert(batch_cases)
            rows.insert(batch_rows)
            counts["runs"] += len(batch_runs)
            counts["cases"] += len(batch_cases)
            if counts["runs"] % (BATCH_RUNS * 25) == 0:
                self.stdout.write(f"  {counts['runs']:,} runs, {counts['cases']:,} case rows")
        _reset_id_sequence(PublishedRun)  # the runs were given their ids; PostgreSQL's sequence must follow
        counts["entries"] = leaderboard.rebuild_all(say=self.stdout.write)
        return counts

    @staticmethod
    def _run(values, run_id, submissions, per_system) -> dict:
        from benchpack.registry import fingerprint as fp

        system, pack = values.system, values.pack
        shared = per_system.get((system.index, pack.pack_id))
        if shared is None:
            shared = per_system[(system.index, pack.pack_id)] = {
                "submission_id": submissions[system.index].pk, "pack_id": pack.pack_id,
                "pack_version": pack.version, "adapter": pack.adapter, "model": system.model,
                "runtime": f"{system.runtime} {system.version}",
                "hardware_class": system.key.fields["hardware_class"] or "", "provenance": "self-reported",
                "is_demo": True, "hardware": system.hardware, "run_metadata": system.metadata,
                "system_key": system.key.digest, "system_fields": system.key.to_dict(),
                "pack_workload_key": fp.pack_workload_key([key for _, key, _ in pack.cases]).digest,
                "model_family": system.family, "model_quantization": system.quantization,
                "runtime_name": system.runtime, "runtime_version": system.version,
                "accelerator": fp.accelerator(system.hardware) or "", "status": "published", "status_reason": "",
                "status_changed_at": None, "flag_note": "", "reproduction_state": "",
                # Made-up figures: never judged against physics (benchpack.results.plausibility), and shown so.
                "plausibility_status": "unchecked",
                "plausibility": SYNTHETIC_PLAUSIBILITY,
            }
        count = len(values.rows) or len(values.cases)
        return {**shared, "id": run_id, "label": values.label, "row_count": count, "ok_count": count,
                "published_at": values.published_at}


def _close_connections() -> None:
    """Before forking: a child must open its own connections, never share the parent's socket. With the
    deployed psycopg pool (settings, DATABASE_POOL) closing a connection only hands it back to the pool,
    which stays open: the children wrote into one socket and PostgreSQL dropped it ("unexpected message
    type 0x51 during COPY"). So the pool goes too; each process builds its own on first use."""
    from django.db import connections

    for conn in connections.all():
        conn.close()
        if hasattr(conn, "close_pool"):  # PostgreSQL's backend
            conn.close_pool()


def _peak_rss_mb() -> float:
    """The largest peak of this process and its ended children (the importing processes of --processes,
    once they have ended): memory is bounded per process; N processes hold about N times it."""
    return max(resource.getrusage(who).ru_maxrss for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)) / 1024


def _catalogue_pairs() -> tuple[set, set]:
    """Every (workload, system) pair of the catalogue's case rows and runs: an import into an empty
    catalogue touched exactly these."""
    from registry_site.catalogue.models import PublishedCase, PublishedRun

    return (set(PublishedCase.objects.order_by().values_list("workload_key", "system_key").distinct()),
            set(PublishedRun.objects.order_by().values_list("pack_workload_key", "system_key").distinct()))


def _analyze(vacuum_runs: bool = False) -> None:
    """Planner statistics for the tables an import filled, before the refresh reads them.

    PostgreSQL plans from statistics that autovacuum updates only after a threshold of changed rows and a
    delay: right after an import into a fresh database they still said "empty", and every refresh query
    walked every public run through a nested loop (2.1 s a system at 20k case rows; 0.14 s analysed —
    docs/leaderboards.md, "Import"). ANALYZE reads a fixed-size sample per table, whatever its size.

    `vacuum_runs` (the bulk-load mode): the run table is VACUUMed too, which marks its pages all-visible, so
    the run list's counts and pages are index-only scans from the first request instead of a heap read per
    run until autovacuum comes by (at 10M case rows a dated count read 95k pages, 363 ms, against 37 ms
    after the VACUUM, which took 76 s: docs/leaderboards.md "At 10M case rows"). Outside a transaction only.
    """
    from django.db import connection

    from registry_site.catalogue.models import LeaderboardEntry, PublishedCase, PublishedRow, PublishedRun
    from submissions.models import Submission

    with connection.cursor() as cursor:
        for model in (Submission, PublishedRun, PublishedCase, PublishedRow, LeaderboardEntry):
            command = "VACUUM (ANALYZE)" if vacuum_runs and model is PublishedRun else "ANALYZE"
            cursor.execute(f"{command} {connection.ops.quote_name(model._meta.db_table)}")


def _published_result(values):
    """One synthetic run as an approved submission hands it to the catalogue: its files' JSON objects and the
    same rows decoded by the row contract from JSON lines (submissions.publication.published_results_of)."""
    from benchpack.results.contract import ROW_DECODER
    from benchpack.results.resultdir import ResultDir
    from registry_site.catalogue.publishing import PublishedResult

    rows = [row["raw"] for row in values.rows]
    return PublishedResult(result=ResultDir(path=PurePosixPath(values.label), rows=rows,
                                            hardware=values.system.hardware, run_metadata=values.system.metadata),
                           rows=[ROW_DECODER.decode(json.dumps(row)) for row in rows])


def _reset_id_sequence(model) -> None:
    from django.core.management.color import no_style
    from django.db import connection

    with connection.cursor() as cursor:
        for statement in connection.ops.sequence_reset_sql(no_style(), [model]):  # none on SQLite
            cursor.execute(statement)


class Inserter:
    """executemany straight into a model's table: the synthetic rows are already valid, and
    bulk_create's per-value preparation was most of the seeding time. JSON is encoded once
    per distinct object (systems share theirs)."""

    def __init__(self, model, shared_json: tuple[str, ...] = ()):
        from django.db import connection, models

        self.connection = connection
        fields = [f for f in model._meta.concrete_fields if not (f.primary_key and model.__name__ != "PublishedRun")]
        self.names = [f.attname for f in fields]
        # A column the synthetic plan does not fill gets its model default (a column added later, e.g.
        # claimed_provenance, was NULL and PostgreSQL refused the whole seed).
        self.defaults = {f.attname: f.get_default() for f in fields if f.has_default() and not f.null}
        columns = ", ".join(connection.ops.quote_name(f.column) for f in fields)
        self.sql = (f"INSERT INTO {connection.ops.quote_name(model._meta.db_table)} ({columns}) "
                    f"VALUES ({', '.join(['%s'] * len(fields))})")
        self.encoders = []
        for f in fields:
            if isinstance(f, models.JSONField):
                self.encoders.append(self._shared_json if f.name in shared_json else self._json)
            elif isinstance(f, models.DateTimeField):
                self.encoders.append(connection.ops.adapt_datetimefield_value)
            elif isinstance(f, models.ForeignKey) and isinstance(f.target_field, models.UUIDField):
                self.encoders.append(lambda v, target=f.target_field: target.get_db_prep_value(v, connection))
            elif isinstance(f, models.BooleanField):
                self.encoders.append(lambda v: None if v is None else bool(v))
            else:
                self.encoders.append(None)
        self.encoded: dict[int, tuple] = {}

    @staticmethod
    def _json(value):
        return None if value is None else json.dumps(value)

    def _shared_json(self, value):
        """For objects many rows share (a system's hardware, a workload's fields): encoded once."""
        if value is None:
            return None
        found = self.encoded.get(id(value))
        if found is None or found[0] is not value:
            found = self.encoded[id(value)] = (value, json.dumps(value))
        return found[1]

    def insert(self, dicts: list[dict]) -> None:
        if not dicts:
            return
        names, encoders, defaults = self.names, self.encoders, self.defaults
        params = [tuple(enc(d.get(n, defaults.get(n))) if enc else d.get(n, defaults.get(n))
                        for n, enc in zip(names, encoders)) for d in dicts]
        with self.connection.cursor() as cursor:
            cursor.executemany(self.sql, params)


_JOB = None  # the import a forked process works on (set by Command._in_processes before the fork)


def _run_share(phase: str, share: int):
    """In a forked process: publish or refresh share `share` of `_JOB`."""
    job = _JOB
    if phase == "publish":
        def tick(runs, cases):
            with job.shared.get_lock():
                job.shared[0] += runs
                job.shared[1] += cases
        return job.publish_share(share, tick)
    return job.refresh_share(share)


class _Import:
    """One publishing-path import: which process publishes which runs, and how."""

    def __init__(self, plan, submission_ids: dict, offset: int, now, batch_runs: int, processes: int,
                 pairs_after: bool = False):
        self.plan, self.submission_ids, self.offset, self.now = plan, submission_ids, offset, now
        self.batch_runs, self.processes = batch_runs, processes
        self.pairs_after = pairs_after  # the caller reads the touched pairs once, after publishing
        self.progress = [0, 0]  # runs, case rows
        self.shared = None
        self.pairs = (set(), set())

    def owns(self, system_index: int, share: int) -> bool:
        return system_index % self.processes == share

    def publish_share(self, share: int, tick) -> tuple[set, set]:
        """Publish this share's runs, a batch per transaction; the (workload, system) pairs they touched."""
        from django.db import connection

        from registry_site.catalogue import leaderboard, publishing, synthetic
        from registry_site.catalogue.models import PublishedRun

        plan = self.plan
        rng = random.Random(plan.seed)
        case_pairs, pack_pairs = set(), set()
        table = connection.ops.quote_name(PublishedRun._meta.db_table)
        if connection.vendor == "postgresql":
            # One statement a batch: executemany's one UPDATE a run was a round trip each.
            def backdate(cursor, dates):
                cursor.execute(f"UPDATE {table} AS run SET published_at = dated.at FROM "
                               f"unnest(%s::timestamptz[], %s::bigint[]) AS dated(at, id) WHERE run.id = dated.id",
                               [[at for at, _ in dates], [pk for _, pk in dates]])
        else:
            def backdate(cursor, dates):
                cursor.executemany(f"UPDATE {table} SET published_at = %s WHERE id = %s", dates)
        for start in range(0, plan.runs, self.batch_runs):
            by_system = defaultdict(list)
            for number in range(start, min(plan.runs, start + self.batch_runs)):
                # Every share draws every run (the plan's random numbers are one sequence) and keeps its own.
                values = synthetic.run_values(plan, number, rng, self.now)
                if self.owns(values.system.index, share):
                    values.label = f"synthetic-{self.offset + number:07d}"
                    by_system[values.system.index].append(values)
            if not by_system:
                continue
            cases = 0
            with transaction.atomic():
                published, dates = [], []
                for index, items in by_system.items():
                    runs = publishing.publish(publishing.Publication(
                        submission_id=self.submission_ids[index], results=[_published_result(v) for v in items],
                        claimed_provenance="self-reported", provenance="self-reported",
                        provenance_basis="synthetic catalogue (manage.py seed_catalogue)", is_demo=True),
                        refresh=False)
                    published.extend(runs)
                    # published_at is the approval's now (auto_now_add); the plan spreads runs over 180 days
                    # so that timelines and change detection have history.
                    dates.extend((connection.ops.adapt_datetimefield_value(v.published_at), run.pk)
                                 for v, run in zip(items, runs))
                    cases += sum(len(v.cases) for v in items)
                with connection.cursor() as cursor:
                    backdate(cursor, dates)
                if not self.pairs_after:
                    batch_cases, batch_packs = leaderboard.pairs_of(published)
                    case_pairs |= batch_cases
                    pack_pairs |= batch_packs
            tick(len(published), cases)
        return case_pairs, pack_pairs

    def refresh_share(self, share: int) -> int:
        """The leaderboard rows of this share's systems (after every share has published)."""
        from registry_site.catalogue import leaderboard

        case_pairs, pack_pairs = self.pairs
        # Split by the pairs' own system keys (what the refresh groups by), every process a slice of them.
        mine = set(sorted({system for _, system in case_pairs | pack_pairs})[share::self.processes])
        return leaderboard.refresh_pairs({p for p in case_pairs if p[1] in mine},
                                         {p for p in pack_pairs if p[1] in mine},
                                         say=lambda text: print(f"[process {share + 1}]{text}", flush=True),
                                         counts=False)
