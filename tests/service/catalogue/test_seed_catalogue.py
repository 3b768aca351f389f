"""seed_catalogue: a labelled synthetic catalogue whose boards look like real ones."""

import io

import pytest
from django.core.management import call_command

from registry_site.catalogue import leaderboard as lb
from registry_site.catalogue.models import LeaderboardEntry, PublishedCase, PublishedRow, PublishedRun


def seed(*args):
    out = io.StringIO()
    call_command("seed_catalogue", *args, stdout=out)
    return out.getvalue()


@pytest.mark.django_db
def test_a_dry_run_says_what_it_would_create_and_writes_nothing():
    said = seed("--cases", "1000000", "--dry-run")
    assert "case rows: 1,000,000" in said and "dry run: nothing written" in said
    assert not PublishedRun.objects.exists()


@pytest.mark.django_db
def test_it_seeds_labelled_synthetic_runs_and_builds_the_boards():
    said = seed("--cases", "3000", "--systems", "40", "--seed", "4")
    assert PublishedCase.objects.count() == 3000 == PublishedRow.objects.count()
    runs = PublishedRun.objects.public()
    assert runs.count() == PublishedRun.objects.count() and not runs.filter(is_demo=False).exists()
    assert not runs.exclude(model__startswith="synthetic/").exists()
    assert all(run.run_metadata["synthetic"] for run in runs[:50])
    assert not PublishedRow.objects.exclude(raw__synthetic=True).exists()
    assert f"{LeaderboardEntry.objects.count():,} leaderboard rows" in said
    # the bundled packs' real request settings and case hashes: complete workload keys
    assert not LeaderboardEntry.objects.filter(workload_complete=False).exists()
    board = lb.leaderboard("runtime-sweep", "short")
    entries = list(board.entries[:5])
    assert entries and all(e.is_demo and e.run_count >= 1 for e in entries)
    assert entries[0].decode_tps >= entries[-1].decode_tps
    # the rows are exactly what the approval path would have built from these runs
    before = sorted(LeaderboardEntry.objects.values_list("workload_key", "system_key", "case", "run_count",
                                                         "decode_tps"))
    lb.refresh_for_runs(PublishedRun.objects.all())
    after = sorted(LeaderboardEntry.objects.values_list("workload_key", "system_key", "case", "run_count", "decode_tps"))
    assert after == before


@pytest.mark.django_db
def test_real_runs_push_the_synthetic_rows_out_of_a_board(approve_bundle):
    seed("--cases", "300", "--systems", "10")
    approve_bundle("2026-04-29-llama-server-smoke")
    real = PublishedRun.objects.filter(is_demo=False).get()
    workload = PublishedCase.objects.filter(run=real).values_list("workload_key", flat=True).first()
    case = PublishedCase.objects.filter(run=real).values_list("case", flat=True).first()
    assert all(not e.is_demo for e in lb.leaderboard_entries(real.pack_id, case, workload))


def test_bad_sizes_are_refused():
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="--cases"):
        call_command("seed_catalogue", "--cases", "0", stdout=io.StringIO())


@pytest.mark.django_db
def test_the_publishing_path_and_the_bulk_path_build_the_same_boards():
    said = seed("--cases", "300", "--systems", "10", "--seed", "5", "--bulk")
    bulk = set(LeaderboardEntry.objects.values_list("workload_key", "system_key", "case"))
    said += seed("--cases", "300", "--systems", "10", "--seed", "5")  # through publishing.publish, labels numbered on
    assert PublishedCase.objects.count() == 600 and "peak RSS" in said
    assert set(LeaderboardEntry.objects.values_list("workload_key", "system_key", "case")) == bulk
    assert LeaderboardEntry.objects.filter(run_count=2).exists()  # the same runs again: two behind a row


@pytest.mark.django_db
def test_publishings_writer_stores_every_column_as_the_instances_hold_it():
    """bulk.insert: COPY on PostgreSQL, bulk_create on SQLite. What is read back equals what was built:
    JSON (None as SQL NULL, nested objects, text needing escapes), booleans, nulls, auto_now_add, and the ids
    handed back for the runs that rows point at."""
    from django.utils import timezone

    from registry_site.catalogue import bulk

    seed("--cases", "20", "--systems", "2", "--seed", "3")
    template = PublishedRun.objects.first()
    before = timezone.now()
    runs = [PublishedRun(**{f.attname: getattr(template, f.attname) for f in PublishedRun._meta.concrete_fields
                            if not f.primary_key and f.attname != "published_at"})
            for _ in range(3)]
    for number, run in enumerate(runs):
        run.label = f"writer-{number}\ttab \\ backslash \"quote\" ünïcode\nline"
        run.hardware = None if number == 0 else {"gpus": [{"model": "x\\y", "vram_mb": number}], "null": None}
        run.run_metadata = {"nested": {"list": [1, 2.5, True, None, "s"]}}
        run.is_demo = number == 1
    written = bulk.insert(PublishedRun, runs, with_ids=True)
    assert [r.pk for r in written] == [r.pk for r in runs] and all(r.pk for r in runs)
    rows = [PublishedRow(run=run, case=f"c{n}", repetition=None if n else 2, ok=bool(n), raw={"k": "v\n", "n": n},
                         plausibility=None if n else {"status": "ok"}) for n, run in enumerate(runs)]
    bulk.insert(PublishedRow, iter(rows))  # a generator, as publish hands it over
    for run in runs:
        stored = PublishedRun.objects.get(pk=run.pk)
        for f in PublishedRun._meta.concrete_fields:
            if f.attname != "published_at":
                assert getattr(stored, f.attname) == getattr(run, f.attname), f.attname
        assert before <= stored.published_at <= timezone.now()
    assert PublishedRun.objects.filter(pk=runs[0].pk, hardware__isnull=True).exists()  # SQL NULL, not JSON null
    for row in rows:
        stored = PublishedRow.objects.get(run_id=row.run_id, case=row.case)
        assert (stored.repetition, stored.ok, stored.raw, stored.plausibility) == (
            row.repetition, row.ok, row.raw, row.plausibility)
