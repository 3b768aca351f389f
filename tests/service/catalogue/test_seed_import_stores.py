"""seed_catalogue's publishing path stores the same catalogue whatever its speed-ups and process count.

`stored` reads back everything an import wrote — runs, raw rows, case rows, leaderboard rows — in a form
that does not depend on ids or on the minute of the import (ids become run labels, times are measured
from the earliest run's). `MAIN_DIGEST` is that form's digest for one small import as main's code stored
it before the import was made faster (commit 498b74b, the same on SQLite and PostgreSQL): a change in
any stored value, on either database, fails here.
"""

import datetime as dt
import hashlib
import io
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection, models, transaction

from registry_site.catalogue.models import (LeaderboardEntry, PublicRunCount, PublishedCase, PublishedRow,
                                            PublishedRun)
from tests.service.catalogue.test_run_counts import assert_table_exact as assert_counts_exact

# Several batches (--batch-runs 40), two repetitions a case (medians over more than one row).
IMPORT = ("--cases", "400", "--systems", "12", "--seed", "5", "--rows-per-case", "2", "--batch-runs", "40")
MAIN_DIGEST = "2a4e970b73dc9c81aaca116e059dd0faebeefd53efbeed9614a25a73e29b2df3"


def seed(*args):
    out = io.StringIO()
    call_command("seed_catalogue", *args, stdout=out)
    return out.getvalue()


def _values(obj, base: dt.datetime, labels: dict, skip=()) -> dict:
    values = {}
    for f in type(obj)._meta.concrete_fields:
        if f.primary_key or f.attname in skip:
            continue
        value = getattr(obj, f.attname)
        if isinstance(f, models.DateTimeField) and value is not None:
            value = (value - base) // dt.timedelta(microseconds=1)
        elif f.attname in ("run_id", "representative_run_id"):
            value = labels.get(value, value)
        elif isinstance(f, models.JSONField):
            value = json.dumps(value, sort_keys=True)
        values[f.attname] = value
    return values


def stored() -> dict:
    """Everything the import stored, keyed and ordered without ids; times relative to the first run."""
    runs = list(PublishedRun.objects.select_related("submission"))
    base = min(run.published_at for run in runs)
    labels = {run.pk: run.label for run in runs}
    def record(obj, **extra):
        return json.dumps({**_values(obj, base, labels, skip=tuple(extra)), **extra}, sort_keys=True, default=repr)

    return {
        "runs": sorted(record(run, submission_id=run.submission.archive_sha256) for run in runs),
        "rows": sorted(record(row) for row in PublishedRow.objects.all()),
        "cases": sorted(record(case) for case in PublishedCase.objects.all()),
        "entries": sorted(record(entry) for entry in LeaderboardEntry.objects.all()),
    }


def digest(catalogue: dict) -> str:
    return hashlib.sha256(json.dumps(catalogue, sort_keys=True, default=repr).encode()).hexdigest()


@pytest.mark.django_db
def test_an_import_stores_what_mains_code_stored():
    said = seed(*IMPORT)
    catalogue = stored()
    assert len(catalogue["cases"]) == 400 and len(catalogue["rows"]) == 800 and catalogue["entries"]
    assert digest(catalogue) == MAIN_DIGEST, "seed_catalogue stores something else than main's code did"
    assert "case rows/s" in said


@pytest.mark.django_db(transaction=True)
def test_several_processes_store_what_one_process_stores():
    seed(*IMPORT)
    one = stored()
    for model in (LeaderboardEntry, PublishedCase, PublishedRow, PublishedRun):
        model.objects.all().delete()
    if connection.vendor != "postgresql":
        with pytest.raises(CommandError, match="--processes above 1 needs PostgreSQL"):
            seed(*IMPORT, "--processes", "3")
        return
    PublicRunCount.objects.all().delete()  # the run list's counts: rebuilt once, by the parent
    said = seed(*IMPORT, "--processes", "3")
    assert "400 case rows" in said
    assert stored() == one
    assert_counts_exact()


def _schema() -> tuple[list, list]:
    """The run, case and raw row tables' index and foreign key definitions, as PostgreSQL states them."""
    tables = [m._meta.db_table for m in (PublishedRun, PublishedCase, PublishedRow)]
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = ANY(%s) ORDER BY 1", [tables])
        indexes = cursor.fetchall()
        cursor.execute("SELECT conname, pg_get_constraintdef(oid), condeferrable, condeferred, convalidated "
                       "FROM pg_constraint WHERE conrelid::regclass::text = ANY(%s) ORDER BY 1", [tables])
        constraints = cursor.fetchall()
    return indexes, constraints


def _heap_fetches_of_the_public_run_count() -> int:
    """Heap pages an index-only count of the published runs had to read: 0 once the run table's pages are marked
    all-visible (a VACUUM), one per run before."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off")
        cursor.execute("EXPLAIN (ANALYZE, FORMAT JSON) SELECT count(*) FROM registry_site_publishedrun "
                       "WHERE status = 'published'")
        plan = cursor.fetchone()[0]
    plan = json.loads(plan) if isinstance(plan, str) else plan
    nodes, fetches = [plan[0]["Plan"]], []
    while nodes:
        node = nodes.pop()
        fetches += [node["Heap Fetches"]] if "Heap Fetches" in node else []
        nodes += node.get("Plans", [])
    assert fetches, "the count was not an index-only scan"
    return sum(fetches)


@pytest.mark.django_db(transaction=True)
def test_the_bulk_load_mode_stores_what_mains_code_stored_and_puts_every_index_back():
    if connection.vendor != "postgresql":
        with pytest.raises(CommandError, match="--defer-indexes needs PostgreSQL"):
            seed(*IMPORT, "--defer-indexes")
        assert not PublishedRun.objects.exists()
        return
    before = _schema()
    assert len(before[0]) > 20 and any("FOREIGN KEY" in c[1] for c in before[1])
    said = seed(*IMPORT, "--defer-indexes", "--processes", "3")
    assert "indexes built" in said and "foreign keys added and checked" in said
    assert digest(stored()) == MAIN_DIGEST
    assert _schema() == before, "an index or a foreign key was not put back as it was"
    assert _heap_fetches_of_the_public_run_count() == 0, "the run table was not VACUUMed: its counts read the heap"
    # Into a catalogue that has runs, refused before anything is dropped or written.
    runs = PublishedRun.objects.count()
    with pytest.raises(CommandError, match="for an empty catalogue"):
        seed(*IMPORT, "--defer-indexes")
    assert PublishedRun.objects.count() == runs and _schema() == before


@pytest.mark.django_db(transaction=True)
def test_the_bulk_load_mode_reads_the_touched_pairs_once_not_a_batch_at_a_time(monkeypatch):
    """Without the case table's run index, reading each batch's pairs back scanned every case row (stop 42's
    10M import: ~1 min a batch at 9M). The bulk-load mode reads the catalogue's pairs once, after the rebuild."""
    if connection.vendor != "postgresql":
        return  # --defer-indexes needs PostgreSQL (refused on SQLite: the test above)
    from registry_site.catalogue import leaderboard

    def per_batch(runs):
        raise AssertionError("a batch's pairs were read back while the indexes were deferred")

    monkeypatch.setattr(leaderboard, "pairs_of", per_batch)
    seed(*IMPORT, "--defer-indexes")
    assert digest(stored()) == MAIN_DIGEST


@pytest.mark.django_db
def test_publishings_quick_instances_are_what_the_models_constructor_makes(monkeypatch):
    """publishing._new_of_run skips Model.__init__: every call names every column, and the instance holds
    what `model(run=run, **values)` holds, field by field (the stored digest above checks the columns)."""
    from registry_site.catalogue import publishing

    quick = publishing._new_of_run
    checked = {PublishedRow: 0, PublishedCase: 0}

    def compared(model, run, **values):
        made = quick(model, run, **values)
        columns = {f.attname for f in model._meta.concrete_fields}
        assert set(values) | {"id", "run_id"} == columns, f"{model.__name__}: columns not named"
        expected = model(run=run, **values)
        for name in columns:
            assert getattr(made, name) == getattr(expected, name), (model.__name__, name)
        assert made.run is run and made._state.adding and made._state.db is None
        checked[model] += 1
        return made

    monkeypatch.setattr(publishing, "_new_of_run", compared)
    seed(*IMPORT)
    assert checked == {PublishedRow: 800, PublishedCase: 400}
    assert digest(stored()) == MAIN_DIGEST


@pytest.mark.parametrize("cache_state", ["cold", "warm", "unknown"])
def test_one_ok_row_medians_are_the_general_medians(cache_state):
    """publishing's shortcut for a case with one ok row gives what the medians over its rows give."""
    from benchpack.results.contract import AgentSession, Timing, Tokens
    from registry_site.catalogue import publishing

    figures = [None, 0, 0.0, 3, 2.5, 1e-9, 1e308, float("nan"), float("inf"), -1.5]
    for index, value in enumerate(figures):
        other = figures[(index + 3) % len(figures)]
        timing = Timing(wall_s=value, ttft_s=other, prefill_tps=value, decode_tps=other, total_tps=value,
                        tpot_s=value)
        tokens = Tokens(prompt=index if index % 2 else None, cached_prompt=0)
        for session in (None, AgentSession(time_to_solution_s=value, ttft_p50_s=other, decode_tps_p50=value)):
            one = publishing._one_row_medians(cache_state, timing, tokens, session)
            general = publishing._medians(cache_state, [timing], [tokens], [session] if session else [])
            assert json.dumps(one, sort_keys=True) == json.dumps(general, sort_keys=True), (value, session)
            assert [type(v) for v in one.values()] == [type(general[k]) for k in one]


@pytest.mark.django_db(transaction=True)
def test_the_bulk_load_mode_puts_the_indexes_back_when_publishing_fails(monkeypatch):
    from registry_site.catalogue import publishing

    if connection.vendor != "postgresql":
        with pytest.raises(CommandError, match="--defer-indexes needs PostgreSQL"):
            seed(*IMPORT, "--defer-indexes")
        return
    before = _schema()
    real, calls = publishing.publish, []

    def failing(publication, **kwargs):
        calls.append(publication)
        if len(calls) == 5:
            raise RuntimeError("publishing failed midway")
        return real(publication, **kwargs)

    monkeypatch.setattr(publishing, "publish", failing)
    with pytest.raises(RuntimeError, match="publishing failed midway"):
        seed(*IMPORT, "--defer-indexes")
    assert _schema() == before, "a failed bulk-load import left the catalogue without an index or a foreign key"


def _seed_in_another_process(*args) -> subprocess.Popen:
    """`manage.py seed_catalogue` on this test's database in a child process, pausing right after the
    bulk-load mode's drop (the command's own hook, BENCHPACK_SEED_PAUSE_AFTER_DROP)."""
    settings_dict = connection.settings_dict
    url = (f"postgres://{settings_dict['USER']}@{settings_dict['HOST'] or '127.0.0.1'}:"
           f"{settings_dict['PORT'] or 5432}/{settings_dict['NAME']}")
    environ = {**os.environ, "DATABASE_URL": url, "DJANGO_SETTINGS_MODULE": "registry_site.settings_test",
               "PYTHONUNBUFFERED": "1", "BENCHPACK_SEED_PAUSE_AFTER_DROP": "600"}
    root = Path(__file__).resolve().parents[3]
    return subprocess.Popen([sys.executable, "manage.py", "seed_catalogue", *args], cwd=root, env=environ,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.django_db(transaction=True)
def test_a_bulk_load_import_killed_between_drop_and_rebuild_gets_every_definition_back():
    """SIGKILL after the drop: no `finally` runs. The dropped definitions were recorded with the drop;
    `manage.py check --database default` warns, `--restore-indexes` builds every one back exactly as it was,
    and forgets them."""
    from django.core.management import call_command as run
    from django.core.management.base import SystemCheckError

    from registry_site.catalogue.models import DeferredDefinition

    if connection.vendor != "postgresql":
        with pytest.raises(CommandError, match="--defer-indexes needs PostgreSQL"):
            seed(*IMPORT, "--defer-indexes")
        assert "nothing to restore" in seed("--restore-indexes")
        return
    before = _schema()
    child = _seed_in_another_process(*IMPORT, "--defer-indexes")
    try:
        said = ""
        while "pausing" not in said:
            line = child.stdout.readline()
            assert line, child.stderr.read()[-2000:]
            said += line
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=60)
        child.stdout.close()
        child.stderr.close()
    assert child.returncode == -signal.SIGKILL
    killed = _schema()
    assert killed != before and len(killed[0]) < len(before[0]), "the drop did not happen before the kill"
    recorded = {(d.kind, d.name) for d in DeferredDefinition.objects.all()}
    assert {kind for kind, _ in recorded} == {"index", "foreign key"}
    assert len(recorded) == len(before[0]) - len(killed[0]) + len(before[1]) - len(killed[1])
    # The operator is told (a database check), and the hint's command puts everything back.
    with pytest.raises(SystemCheckError, match="--restore-indexes"):
        run("check", "--database", "default", "--fail-level", "WARNING", stdout=io.StringIO(), stderr=io.StringIO())
    said = seed("--restore-indexes")
    assert f"restored {len(recorded)} index and foreign key definitions" in said
    assert _schema() == before, "the restore did not bring back every index and foreign key as it was"
    assert not DeferredDefinition.objects.exists()
    run("check", "--database", "default", "--fail-level", "WARNING", stdout=io.StringIO(), stderr=io.StringIO())
    assert "nothing to restore" in seed("--restore-indexes")


@pytest.mark.django_db(transaction=True)
def test_an_interrupted_rebuild_leaves_recorded_only_what_is_still_missing(monkeypatch):
    """A rebuild that stops partway (here: the fourth statement fails) has forgotten exactly what it built;
    the next seed_catalogue builds the rest back before doing anything else."""
    from registry_site.catalogue import deferred_indexes
    from registry_site.catalogue.models import DeferredDefinition, PublishedRun

    if connection.vendor != "postgresql":
        assert seed(*IMPORT) and not DeferredDefinition.objects.exists()
        return
    before = _schema()
    real, built = deferred_indexes._build, []

    def failing(cursor, deferred, statement):
        if len(built) == 3:
            raise RuntimeError("rebuild interrupted")
        real(cursor, deferred, statement)
        built.append(statement)

    monkeypatch.setattr(deferred_indexes, "_build", failing)
    with pytest.raises(RuntimeError, match="rebuild interrupted"):
        seed(*IMPORT, "--defer-indexes")  # one worker: three built, then the failure
    left = set(DeferredDefinition.objects.values_list("definition", flat=True))
    assert left and not left & set(built)
    indexes_left = DeferredDefinition.objects.filter(kind=DeferredDefinition.INDEX).count()
    assert len(_schema()[0]) == len(before[0]) - indexes_left
    monkeypatch.setattr(deferred_indexes, "_build", real)
    runs = PublishedRun.objects.count()
    said = seed("--cases", "10", "--systems", "2", "--seed", "9")
    assert (f"{indexes_left} indexes and {len(left) - indexes_left} foreign keys were dropped by an import that "
            "did not finish") in said
    assert _schema() == before and not DeferredDefinition.objects.exists()
    assert PublishedRun.objects.count() > runs
