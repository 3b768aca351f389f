"""The run list's precomputed count (registry_site.catalogue.run_counts, issue 34 item 4) is the count of the runs.

Over a catalogue of several groups — a synthetic import (demo runs of six systems), real llama-server and MLX
runs of two owners, a run imported from another tool — and through a withdrawal, an unpublish, a flag, a
reproduction that upgrades a run's provenance and a republish: after each change the count table equals a
fresh GROUP BY over the public runs, and `/api/v1/runs/`'s `count` equals `PublishedRun.objects.public()`
filtered the same way, for every filter value and many combinations (dates too, which the list counts itself).
"""

from __future__ import annotations

import datetime as dt
import io
import itertools

import pytest
from django.core.cache import cache
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from benchpack.bundles.archives import pack_archive
from benchpack.cli import main
from benchpack.results.provenance import EARNED as PROVENANCES
from registry_site.catalogue import leaderboard, run_counts, transitions
from registry_site.catalogue.models import PublicRunCount, PublishedRun
from submissions import states
from submissions.tasks import validate_submission
from tests.data_paths import DATA
from tests.service.vouch import approve

pytestmark = pytest.mark.django_db
IMPORT = ("--cases", "160", "--systems", "6", "--seed", "3", "--rows-per-case", "2", "--batch-runs", "30")
# The run list's equality filters and the run column each selects on.
COLUMNS = {"pack": "pack_id", "pack_version": "pack_version", "model": "model", "runtime": "runtime",
           "hardware_class": "hardware_class"}


def stored() -> dict:
    return {tuple(row[name] for name in run_counts.KEY): row["runs"]
            for row in PublicRunCount.objects.values(*run_counts.KEY, "runs")}


def grouped_afresh() -> dict:
    return {tuple(group[name] for name in run_counts.KEY): group["runs"]
            for group in run_counts.groups_of(PublishedRun.objects.public())}


def assert_table_exact() -> None:
    expected = grouped_afresh()
    assert expected and stored() == expected
    assert all(row.group_key == run_counts.group_key({name: getattr(row, name) for name in run_counts.KEY})
               for row in PublicRunCount.objects.all())


def expected_count(query: dict) -> int:
    runs = PublishedRun.objects.public()
    for name, value in query.items():
        if value == "":
            continue  # `?runtime=` is no filter (django-filter): the list is every public run
        if name in COLUMNS:
            runs = runs.filter(**{COLUMNS[name]: value})
        elif name == "provenance":
            runs = runs.filter(provenance=value)
        elif name == "imported" and value != "include":
            runs = runs.filter(imported_from="") if value == "exclude" else runs.exclude(imported_from="")
        elif name == "since":
            runs = runs.filter(published_at__date__gte=value)
        elif name == "until":
            runs = runs.filter(published_at__date__lte=value)
    return runs.count()


def filter_queries() -> list[dict]:
    """Every single filter value of the public runs, every provenance and imported choice, each run's own
    combinations (with the choices beside them), combinations that select nothing, and date ranges."""
    public = PublishedRun.objects.public()
    queries: list[dict] = [{}]
    for name, column in COLUMNS.items():
        queries += [{name: value} for value in sorted(set(public.values_list(column, flat=True)))]
    queries += [{"provenance": p} for p in PROVENANCES] + [{"imported": c} for c in ("include", "exclude", "only")]
    combos = set()
    for run in public.order_by("pk"):
        values = {name: getattr(run, column) for name, column in COLUMNS.items()}
        for size in (2, 5):
            for names in itertools.combinations(COLUMNS, size):
                combos.add(tuple((name, values[name]) for name in names))
        combos.add((("pack", run.pack_id), ("provenance", run.provenance)))
        combos.add((("model", run.model), ("imported", "exclude")))
        combos.add((("pack", run.pack_id), ("imported", "only")))
        combos.add(tuple(values.items()) + (("provenance", run.provenance), ("imported", "include")))
    queries += [dict(combo) for combo in sorted(combos)]
    real = public.filter(is_demo=False).order_by("pk").first()
    demo = public.filter(is_demo=True).order_by("pk").first()
    queries.append({"pack": real.pack_id, "model": demo.model})  # both known, no run has both: 0
    today = dt.date.today()
    queries += [{"since": str(today)}, {"until": str(today - dt.timedelta(days=30))},
                {"pack": demo.pack_id, "since": str(today - dt.timedelta(days=90))},
                {"model": real.model, "until": str(today), "imported": "exclude"}]
    return queries


def assert_api_counts(client) -> int:
    checked = 0
    for query in filter_queries():
        expected = expected_count(query)
        for extra in ({}, {"order": "-rows", "page_size": "2"}, {"page_size": "2", "page": "2"}):
            if extra.get("page") == "2" and expected <= 2:
                continue  # past the last page: a 404, not a count
            cache.clear()  # the throttle's counts: hundreds of requests from one address
            response = client.get("/api/v1/runs/", {**query, **extra})
            assert response.status_code == 200, (query, extra, response.content[:300])
            assert response.json()["count"] == expected, (query, extra)
            checked += 1
    return checked


def _command(*args) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


@pytest.fixture
def catalogue(approve_bundle, make_user, submit, operator, submitter, tmp_path):
    _command("seed_catalogue", *IMPORT)
    assert_table_exact()  # the import's refresh rebuilt it
    approve_bundle("2026-04-29-llama-server-runtime", user=submitter)
    bob = make_user("bob@example.org")
    approve_bundle("2026-04-29-llama-server-smoke", user=bob)
    approve_bundle("2026-04-28-mlx-lm-runtime", user=bob)
    bundle = tmp_path / "imported-bundle"
    assert main(["import", "guidellm", str(DATA / "interop" / "guidellm-benchmarks.json"), "--out", str(bundle),
                 "--runtime", "llama.cpp b6123"]) == 0
    imported = submit(pack_archive(bundle, tmp_path / "imported.tar.gz"))
    assert validate_submission(str(imported.pk)) == states.QUARANTINED
    assert approve(imported.pk, operator)
    assert PublishedRun.objects.exclude(imported_from="").count() == 1
    return {"bob": bob}


def test_the_count_table_and_the_api_count_follow_every_change(catalogue, client, operator, submitter):
    from submissions.runqueue.models import Reproduction
    from submissions.runqueue.reproduction import mark_reproduction

    assert_table_exact()
    assert assert_api_counts(client) > 300
    real = PublishedRun.objects.filter(is_demo=False, imported_from="")
    mine = real.get(submission__submitter=submitter)
    assert transitions.withdraw(mine.pk, submitter, "wrong quantization recorded")
    assert_table_exact()
    demo = PublishedRun.objects.filter(is_demo=True).order_by("pk")
    assert transitions.unpublish(demo[0].pk, operator, "a duplicate")
    assert transitions.flag(demo[1].pk, operator, "a note on a demo run")  # stays public, stays counted
    assert_table_exact()
    # A reproduction upgrades the reproducing run's provenance: out of its self-reported group, into another.
    original, reproducing = real.filter(submission__submitter=catalogue["bob"]).order_by("pk")
    before = stored()
    Reproduction.objects.create(original=original, reproduction=reproducing, verdict="reproduced", independent=True,
                                tolerance="test")
    mark_reproduction(original, reproducing, matched=True)
    assert PublishedRun.objects.get(pk=reproducing.pk).provenance == "independently-reproduced"
    assert_table_exact()
    provenance = run_counts.KEY.index("provenance")
    assert stored() != before and any(key[provenance] == "independently-reproduced" for key in stored())
    assert transitions.republish(demo[0].pk, operator, "not a duplicate after all")
    assert_table_exact()
    assert assert_api_counts(client) > 300


def test_the_bulk_paths_and_the_migration_write_the_same_table(catalogue, operator):
    from django.apps import apps
    from importlib import import_module

    assert transitions.unpublish(PublishedRun.objects.order_by("pk").first().pk, operator, "a duplicate")
    expected = grouped_afresh()

    def scramble():
        PublicRunCount.objects.filter(pk__in=PublicRunCount.objects.order_by("pk").values("pk")[:3]).delete()
        PublicRunCount.objects.update(runs=99)
        assert stored() != expected

    for rebuild in (leaderboard.rebuild_all, lambda: _command("refresh_leaderboards"),
                    lambda: _command("rebuild_leaderboards"), run_counts.rebuild,
                    lambda: leaderboard.refresh_pairs(*leaderboard.pairs_of(PublishedRun.objects.all())),
                    lambda: import_module("registry_site.catalogue.migrations.0015_public_run_count")
                    .count_public_runs(apps, None)):
        scramble()
        rebuild()
        assert stored() == expected


def test_a_share_of_a_parallel_refresh_leaves_the_counts_to_its_parent(catalogue):
    PublicRunCount.objects.update(runs=99)
    leaderboard.refresh_systems(leaderboard.public_systems()[:2], counts=False)
    assert set(stored().values()) == {99}


def test_the_list_counts_from_the_table_and_counts_the_runs_only_for_dates(catalogue, client):
    run = PublishedRun.objects.public().order_by("pk").first()
    runs_table, counts_table = PublishedRun._meta.db_table, PublicRunCount._meta.db_table

    def counts(query: dict) -> list[str]:
        with CaptureQueriesContext(connection) as captured:
            assert client.get("/api/v1/runs/", query).status_code == 200
        # The count: a COUNT or SUM that is not the page (LIMIT; its case counts are COUNTs too), a known-value
        # check (EXISTS … LIMIT 1) nor the throttle's (its cache table).
        return [q["sql"] for q in captured if "LIMIT" not in q["sql"].upper()
                and ("COUNT(" in q["sql"].upper() or "SUM(" in q["sql"].upper())
                and (runs_table in q["sql"] or counts_table in q["sql"])]

    for query in ({}, {"pack": run.pack_id, "model": run.model, "imported": "exclude", "order": "id"},
                  {"hardware_class": run.hardware_class, "provenance": run.provenance, "page_size": "1"}):
        counted = counts(query)
        assert len(counted) == 1 and counts_table in counted[0] and runs_table not in counted[0], counted
    counted = counts({"pack": run.pack_id, "since": str(dt.date.today() - dt.timedelta(days=400))})
    assert len(counted) == 1 and runs_table in counted[0] and counts_table not in counted[0], counted


def test_a_group_with_no_public_run_left_has_no_row_and_its_values_are_unknown(approve_bundle, submitter, client):
    approve_bundle("2026-04-29-llama-server-runtime", user=submitter)
    run = PublishedRun.objects.get()
    assert stored() == {(run.pack_workload_key, run.system_key, run.pack_id, run.pack_version, run.model, run.runtime,
                         run.hardware_class, run.provenance, False): 1}
    query = {name: getattr(run, column) for name, column in COLUMNS.items()}
    assert client.get("/api/v1/runs/", query).json()["count"] == 1
    assert transitions.withdraw(run.pk, submitter, "measured on the wrong machine")
    assert not PublicRunCount.objects.exists()
    for name, value in query.items():
        if value == "":
            continue  # `?runtime=` is no filter, not an unknown value
        response = client.get("/api/v1/runs/", {name: value})
        assert response.status_code == 400 and name in response.json()["fields"], (name, response.content)
