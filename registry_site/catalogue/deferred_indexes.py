"""A bulk-load mode for an import into an empty catalogue on PostgreSQL: secondary indexes and foreign keys
are built once after the load instead of maintained row by row during it.

Why: every COPYed run updated 28 B-tree indexes (the run table's filters and partial indexes) and queued a
deferred foreign-key check for every run, raw row and case row, run at COMMIT one index probe at a time.
Built after the load, an index is one sort of the table and a foreign key one join of the two tables
(`ALTER TABLE … ADD CONSTRAINT` validates every row), which is what PostgreSQL's own guide to populating a
database recommends ("Remove Indexes", "Remove Foreign Key Constraints"). What ends up stored is the same:
the same rows, the same index and constraint definitions (read from the catalogue before dropping them and
re-run verbatim). Primary keys, unique constraints and check constraints stay in place throughout, so a
duplicate or an out-of-range value is still refused by the statement that writes it.

Only for tables that are empty when the import starts (`empty`): dropping an index of a live catalogue would
make its pages slow for the length of the import. While the import runs the catalogue's pages are slow
anyway (no indexes); the import is a seeding step, not something run beside live traffic.

Durable: each dropped definition is written to `DeferredDefinition` in the transaction that drops it, and
deleted in the transaction that builds it back. A command killed in between (SIGKILL, an out-of-memory kill,
the machine going down) leaves exactly the missing definitions recorded; `restore_recorded` builds them
back (`seed_catalogue --restore-indexes`, and the first thing any `seed_catalogue` does), and
`manage.py check --database default` warns while any is recorded (`check_recorded`).
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field


@dataclass
class Deferred:
    """What was dropped, as the SQL that puts it back."""

    indexes: list[str] = field(default_factory=list)  # CREATE INDEX statements, verbatim from pg_indexes
    constraints: list[str] = field(default_factory=list)  # ALTER TABLE … ADD CONSTRAINT … statements
    # statement -> its DeferredDefinition name (the row deleted with the build; absent: nothing recorded)
    names: dict[str, str] = field(default_factory=dict)

    def statements(self) -> list[str]:
        return self.indexes + self.constraints


def tables_of(models) -> list[str]:
    return [model._meta.db_table for model in models]


def empty(models) -> bool:
    return not any(model.objects.exists() for model in models)


def drop(models) -> Deferred:
    """Drop the secondary (non-unique) indexes and the foreign keys of `models`' tables, in one transaction;
    what to run to restore them."""
    from django.db import connection, transaction

    from registry_site.catalogue.models import DeferredDefinition

    tables = tables_of(models)
    deferred = Deferred()
    records = []
    with transaction.atomic(), connection.cursor() as cursor:
        # Foreign keys first: their own definitions, re-added after the indexes they are checked with.
        cursor.execute(
            "SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid) FROM pg_constraint "
            "WHERE contype = 'f' AND conrelid::regclass::text = ANY(%s) ORDER BY 1, 2", [tables])
        for table, name, definition in cursor.fetchall():
            statement = f'ALTER TABLE {table} ADD CONSTRAINT "{name}" {definition}'
            deferred.constraints.append(statement)
            deferred.names[statement] = name
            records.append(DeferredDefinition(name=name, kind=DeferredDefinition.FOREIGN_KEY, table_name=table,
                                              definition=statement))
            cursor.execute(f'ALTER TABLE {table} DROP CONSTRAINT "{name}"')
        # Every index that backs no constraint (primary keys and unique constraints stay).
        cursor.execute(
            "SELECT i.indexrelid::regclass::text, i.indrelid::regclass::text, pg_get_indexdef(i.indexrelid) "
            "FROM pg_index i "
            "WHERE i.indrelid::regclass::text = ANY(%s) AND NOT i.indisprimary AND NOT i.indisunique "
            "AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid) ORDER BY 1", [tables])
        for name, table, definition in cursor.fetchall():
            deferred.indexes.append(definition)
            deferred.names[definition] = name
            records.append(DeferredDefinition(name=name, kind=DeferredDefinition.INDEX, table_name=table,
                                              definition=definition))
            cursor.execute(f"DROP INDEX {name}")
        # Same transaction as the drops: committed together or not at all.
        DeferredDefinition.objects.bulk_create(records)
    return deferred


def recorded() -> Deferred:
    """What an earlier `drop` left recorded and nobody built back (a killed import): indexes, then foreign keys,
    each in the order `drop` read them."""
    from registry_site.catalogue.models import DeferredDefinition

    deferred = Deferred()
    for name, kind, definition in DeferredDefinition.objects.order_by("id").values_list("name", "kind", "definition"):
        (deferred.indexes if kind == DeferredDefinition.INDEX else deferred.constraints).append(definition)
        deferred.names[definition] = name
    return deferred


def restore_recorded(workers: int = 1, say=print) -> int:
    """Build back every recorded definition (`recorded`); how many there were. Nothing to do on a database
    without any (or without the table's migration applied)."""
    from django.db import connection

    from registry_site.catalogue.models import DeferredDefinition

    if DeferredDefinition._meta.db_table not in connection.introspection.table_names():
        return 0
    deferred = recorded()
    count = len(deferred.statements())
    if count:
        say(f"  {len(deferred.indexes)} indexes and {len(deferred.constraints)} foreign keys were dropped by an "
            "import that did not finish (seed_catalogue --defer-indexes); building them back")
        restore(deferred, workers=workers, say=say)
    return count


def check_recorded(app_configs=None, databases=None, **kwargs):
    """`manage.py check --database default`: a warning while definitions dropped by the bulk-load mode are
    missing (a killed import). A database check, run only when asked for a database, as Django's own are."""
    from django.core import checks
    from django.db import connections

    from registry_site.catalogue.models import DeferredDefinition

    problems = []
    for alias in databases or ():
        table = DeferredDefinition._meta.db_table
        if table not in connections[alias].introspection.table_names():
            continue
        missing = list(DeferredDefinition.objects.using(alias).values_list("kind", "name"))
        if missing:
            problems.append(checks.Warning(
                f"{len(missing)} catalogue index(es)/foreign key(s) dropped by `seed_catalogue --defer-indexes` "
                f"were never built back (the import was interrupted): "
                + ", ".join(f"{kind} {name}" for kind, name in missing[:5]) + (", …" if len(missing) > 5 else ""),
                hint="run `manage.py seed_catalogue --restore-indexes`", id="registry_site.W001"))
    return problems


def _build(cursor, deferred: Deferred, statement: str) -> None:
    """Run one building statement and forget its record, in one transaction (the caller's): built and
    unrecorded together, or neither."""
    from registry_site.catalogue.models import DeferredDefinition

    cursor.execute(statement)
    name = deferred.names.get(statement)
    if name is not None:
        cursor.execute(f"DELETE FROM {DeferredDefinition._meta.db_table} WHERE name = %s", [name])


def restore(deferred: Deferred, workers: int = 1, say=print) -> float:
    """Build the dropped indexes (in `workers` connections side by side), then re-add the foreign keys,
    validating every row; each statement in its own transaction with the deletion of its record. The seconds
    it took."""
    from django.db import connection, transaction

    started = time.monotonic()

    def build(statement: str) -> None:
        from django.db import connection as own  # this thread's connection

        try:
            with transaction.atomic(), own.cursor() as cursor:
                # A sort in memory rather than in temporary files, for one index at a time.
                cursor.execute("SET LOCAL maintenance_work_mem = '256MB'")
                _build(cursor, deferred, statement)
        finally:
            own.close()

    # Each thread holds a connection for a whole build: never more threads than the deployed psycopg pool
    # hands out (settings, DATABASE_POOL_MAX_SIZE), or a thread would time out waiting for one.
    pool_options = connection.settings_dict.get("OPTIONS", {}).get("pool")
    if isinstance(pool_options, dict) and pool_options.get("max_size"):
        workers = min(workers, pool_options["max_size"])
    with ThreadPoolExecutor(max(1, workers)) as pool:
        for _ in pool.map(build, deferred.indexes):  # raises the first failure
            pass
    say(f"  {len(deferred.indexes)} indexes built in {time.monotonic() - started:.0f} s")
    checked = time.monotonic()
    for statement in deferred.constraints:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SET LOCAL maintenance_work_mem = '256MB'")
            _build(cursor, deferred, statement)
    say(f"  {len(deferred.constraints)} foreign keys added and checked in {time.monotonic() - checked:.0f} s")
    return time.monotonic() - started
