"""The run list's count, precomputed: public runs per group of the list's equality filters (issue 34 item 4).

`PublicRunCount` holds one row per (pack_id, pack_version, model, runtime, hardware_class, provenance,
imported) group of public runs (`querysets.PUBLIC_RUN`), split by the runs' (pack workload, system) pair.
`total(**filters)` says how many public runs match equality filters on those columns: a SUM over the matching
rows (a few thousand at most: pairs, not runs), where counting the runs themselves is linear (2–6 s at 10M
case rows on a cold cache).

Kept exact in the transaction that changes which runs are public, or a public run's provenance:

- `recount(runs)`, the per-change path (`leaderboard.refresh_for_runs`: approval, withdraw, unpublish,
  republish, flag, reproduction verdict): the rows of the runs' (pack workload, system) pairs are counted
  again from the pairs' runs (the `run_pack_workload_system` index finds them). A run keeps its pair from its
  publication on, whatever happens to its status or provenance, so a reproduction that upgrades a run's
  provenance rewrites both its old group and its new one.
- `rebuild()`, the bulk paths (`leaderboard.rebuild_all`, an import's refresh, `manage.py
  refresh_leaderboards`) and migration 0015's backfill: every group from one GROUP BY over the public runs.

Both run after the transaction's `cache.bump()`: the generation row's lock orders concurrent writers, so the
counting statements (each with a fresh snapshot under READ COMMITTED) see every earlier writer's committed
runs and count rows, and two approvals of the same group cannot leave a count that misses either's runs.
"""

from __future__ import annotations

import hashlib
import json
import operator
from collections.abc import Iterable
from functools import reduce

from django.db import transaction
from django.db.models import BooleanField, Case, Count, Q, Sum, Value, When

from registry_site.catalogue import cache
from registry_site.catalogue.models import PublicRunCount, PublishedRun
from registry_site.catalogue.querysets import PUBLIC_RUN

# The run list's equality filters' columns; `imported` is `imported_from != ""`.
FILTERED = ("pack_id", "pack_version", "model", "runtime", "hardware_class", "provenance", "imported")
# The pair a run keeps from its publication on (provenance may be upgraded by a reproduction; status changes).
PAIR = ("pack_workload_key", "system_key")
KEY = (*PAIR, *FILTERED)  # the count table's key, in its column order
TEXT_FILTERED = FILTERED[:5]
PAIRS_PER_STATEMENT = 100
INSERT_BATCH = 1000


def _imported() -> Case:
    return Case(When(imported_from="", then=Value(False)), default=Value(True), output_field=BooleanField())


def groups_of(public_runs) -> Iterable[dict]:
    """{key column: value, …, "runs": n} per group of `public_runs` (a queryset of public runs): one GROUP BY."""
    return public_runs.order_by().annotate(imported=_imported()).values(*KEY).annotate(runs=Count("pk"))


def group_key(group: dict) -> str:
    """The digest the table's uniqueness is on (the columns themselves are too wide for a btree row)."""
    values = [bool(group[name]) if name == "imported" else group[name] for name in KEY]
    return hashlib.sha256(json.dumps(values).encode()).hexdigest()


def _write(count_model, groups: Iterable[dict]) -> int:
    rows = [count_model(group_key=group_key(group), runs=group["runs"],
                        **{name: bool(group[name]) if name == "imported" else group[name] for name in KEY})
            for group in groups]
    count_model.objects.bulk_create(rows, batch_size=INSERT_BATCH)
    return len(rows)


def rebuild(models=None) -> int:
    """Every group's count from the public runs, in one transaction (the caller's, if any); the groups.

    `models`: (PublishedRun, PublicRunCount), the historical ones when a migration calls this."""
    run_model, count_model = models or (PublishedRun, PublicRunCount)
    with transaction.atomic():
        if models is None:  # a migration's historical state: nothing to order against, nothing cached
            cache.bump()
        count_model.objects.all().delete()
        return _write(count_model, groups_of(run_model.objects.filter(PUBLIC_RUN)))


def recount(runs: Iterable[PublishedRun]) -> int:
    """Count again the rows of the (pack workload, system) pairs of `runs`, whatever their status or
    provenance (inside the caller's transaction, after its `cache.bump()`); the rows written."""
    pairs = sorted({tuple(getattr(run, name) for name in PAIR) for run in runs})
    written = 0
    for start in range(0, len(pairs), PAIRS_PER_STATEMENT):
        match = reduce(operator.or_, (Q(**dict(zip(PAIR, values)))
                                      for values in pairs[start:start + PAIRS_PER_STATEMENT]))
        PublicRunCount.objects.filter(match).delete()
        written += _write(PublicRunCount, groups_of(PublishedRun.objects.public().filter(match)))
    return written


def is_known(column: str, value) -> bool:
    """Whether a public run has `value` in `column` (one of TEXT_FILTERED): the run list's check of a filter value."""
    if column not in TEXT_FILTERED:
        raise ValueError(f"not a column the count table is keyed on with text: {column}")
    return PublicRunCount.objects.filter(**{column: value}).exists()


def total(**filters) -> int:
    """How many public runs match these equality filters on FILTERED's columns (none: every public run)."""
    unknown = set(filters) - set(FILTERED)
    if unknown:
        raise ValueError(f"not a column of the count table: {sorted(unknown)}")
    return PublicRunCount.objects.filter(**filters).aggregate(total=Sum("runs"))["total"] or 0
