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

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection, models

from registry_site.catalogue.models import LeaderboardEntry, PublishedCase, PublishedRow, PublishedRun

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
    said = seed(*IMPORT, "--processes", "3")
    assert "400 case rows" in said
    assert stored() == one
