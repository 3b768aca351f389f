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
