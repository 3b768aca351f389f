"""Every way of writing leaderboard rows stores the same rows, column by column: the per-change refresh
(approval, flag, unpublish), an import's refresh, `manage.py refresh_leaderboards` (one system at a time,
with --processes on PostgreSQL) and `rebuild_all`.

The catalogue mixes a synthetic import (demo runs, several runs a pair), real llama-server and MLX runs of two
owners, lane rows (depths: a whole-pack row over lane cases only), a flagged run and an unpublished one.
"""

import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection

from registry_site.catalogue import leaderboard, transitions
from registry_site.catalogue.models import LeaderboardEntry, PublicRunCount, PublishedCase, PublishedRun
from tests.service.catalogue.test_run_counts import assert_table_exact as assert_counts_exact
from tests.service import lane_runs

IMPORT = ("--cases", "160", "--systems", "6", "--seed", "3", "--rows-per-case", "2", "--batch-runs", "30")


def _command(*args) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def entries() -> dict:
    """Every stored entry, keyed by (workload, system, case), every column but the id."""
    found = {}
    for values in LeaderboardEntry.objects.values():
        values.pop("id")
        found[(values["workload_key"], values["system_key"], values["case"])] = values
    return found


def assert_same(got: dict, expected: dict) -> None:
    assert set(got) == set(expected), "entries missing or extra"
    differ = [(key, name, got[key][name], value) for key, values in expected.items()
              for name, value in values.items() if got[key][name] != value]
    assert not differ, f"{len(differ)} columns differ, e.g. {differ[:3]}"


@pytest.fixture
def catalogue(approve_bundle, make_user, submit, operator, tmp_path):
    """The mixed catalogue, its rows written by the per-change refresh (and the import's): the rows as stored."""
    _command("seed_catalogue", *IMPORT)
    approve_bundle("2026-04-29-llama-server-runtime")
    bob = make_user("bob@example.org")
    approve_bundle("2026-04-29-llama-server-smoke", user=bob)
    approve_bundle("2026-04-28-mlx-lm-runtime", user=bob)
    lane_runs.approve_lane_run(lane_runs.DEPTH_RUN, tmp_path, submit, operator)
    real = list(PublishedRun.objects.filter(is_demo=False).order_by("pk"))
    assert len(real) >= 4
    assert transitions.flag(real[0].pk, operator, "figures look low")
    demo = PublishedRun.objects.filter(is_demo=True).order_by("pk")
    assert transitions.unpublish(demo[0].pk, operator, "a duplicate")
    assert transitions.flag(demo[1].pk, operator, "a note on a demo run")
    stored = entries()
    assert any(case == "" for _, _, case in stored) and any(" @depth=" in case for _, _, case in stored)
    assert len({system for _, system, _ in stored}) >= 8
    return stored


def _scramble() -> None:
    """Rows gone, rows wrong and a row of a system with no public run."""
    kept = list(LeaderboardEntry.objects.order_by("pk"))
    LeaderboardEntry.objects.filter(pk__in=[e.pk for e in kept[::3]]).delete()
    LeaderboardEntry.objects.filter(pk__in=[e.pk for e in kept[1::3]]).update(
        run_count=99, decode_rate=0.5, workload_fields=None, system_fields={"x": 1}, flag_note="")
    ghost = kept[2]
    ghost.pk, ghost.system_key = None, "no-such-system"
    ghost.save()


def test_the_per_change_refresh_stores_what_rebuild_all_stores(catalogue):
    leaderboard.rebuild_all()
    assert_same(entries(), catalogue)


def test_refresh_leaderboards_rewrites_every_row_as_the_per_change_refresh_wrote_it(catalogue):
    _scramble()
    said = _command("refresh_leaderboards")
    assert_same(entries(), catalogue)
    systems = len(leaderboard.public_systems())
    assert f"refreshing the leaderboard rows of {systems} systems in 1 process (1 rows of systems" in said
    assert f"leaderboard rows of {systems} of {systems} systems" in said
    assert f"{len(catalogue)} leaderboard rows from {PublishedCase.objects.public().count()} case rows" in said


def test_an_imports_refresh_of_every_pair_stores_the_same_rows(catalogue):
    case_pairs = set(PublishedCase.objects.values_list("workload_key", "system_key"))
    pack_pairs = set(PublishedRun.objects.values_list("pack_workload_key", "system_key"))
    LeaderboardEntry.objects.all().delete()
    leaderboard.refresh_pairs(case_pairs, pack_pairs)
    assert_same(entries(), catalogue)


def test_the_per_change_refresh_of_a_few_pairs_rewrites_only_those(catalogue):
    run = PublishedRun.objects.filter(is_demo=False).order_by("pk").last()
    case_pairs, pack_pairs = leaderboard.pairs_of([run])
    mine = {(w, s, c) for (w, s, c) in catalogue if (w, s) in case_pairs | pack_pairs}
    LeaderboardEntry.objects.update(run_count=77)
    leaderboard.refresh_for_runs([run])
    got = entries()
    assert {key for key, values in got.items() if values["run_count"] != 77} == mine
    assert_same({key: got[key] for key in mine}, {key: catalogue[key] for key in mine})


@pytest.mark.django_db(transaction=True)
def test_refresh_leaderboards_in_several_processes(catalogue):
    _scramble()
    if connection.vendor != "postgresql":
        with pytest.raises(CommandError, match="--processes above 1 needs PostgreSQL"):
            _command("refresh_leaderboards", "--processes", "2")
        return
    PublicRunCount.objects.update(runs=99)  # the run list's counts: rebuilt once, by the parent
    said = _command("refresh_leaderboards", "--processes", "3")
    assert "in 3 processes" in said and f"{len(catalogue)} leaderboard rows from" in said
    assert_same(entries(), catalogue)
    assert_counts_exact()
