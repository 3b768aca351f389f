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

    tables = tables_of(models)
    deferred = Deferred()
    with transaction.atomic(), connection.cursor() as cursor:
        # Foreign keys first: their own definitions, re-added after the indexes they are checked with.
        cursor.execute(
            "SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid) FROM pg_constraint "
            "WHERE contype = 'f' AND conrelid::regclass::text = ANY(%s) ORDER BY 1, 2", [tables])
        for table, name, definition in cursor.fetchall():
            deferred.constraints.append(f'ALTER TABLE {table} ADD CONSTRAINT "{name}" {definition}')
            cursor.execute(f'ALTER TABLE {table} DROP CONSTRAINT "{name}"')
        # Every index that backs no constraint (primary keys and unique constraints stay).
        cursor.execute(
            "SELECT i.indexrelid::regclass::text, pg_get_indexdef(i.indexrelid) FROM pg_index i "
            "WHERE i.indrelid::regclass::text = ANY(%s) AND NOT i.indisprimary AND NOT i.indisunique "
            "AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid) ORDER BY 1", [tables])
        for name, definition in cursor.fetchall():
            deferred.indexes.append(definition)
            cursor.execute(f"DROP INDEX {name}")
    return deferred


def restore(deferred: Deferred, workers: int = 1, say=print) -> float:
    """Build the dropped indexes (in `workers` connections side by side), then re-add the foreign keys,
    validating every row. The seconds it took."""
    from django.db import connection

    started = time.monotonic()

    def build(statement: str) -> None:
        from django.db import connection as own  # this thread's connection

        try:
            with own.cursor() as cursor:
                # A sort in memory rather than in temporary files, for one index at a time.
                cursor.execute("SET maintenance_work_mem = '256MB'")
                cursor.execute(statement)
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
    with connection.cursor() as cursor:
        cursor.execute("SET maintenance_work_mem = '256MB'")
        for statement in deferred.constraints:
            cursor.execute(statement)
    say(f"  {len(deferred.constraints)} foreign keys added and checked in {time.monotonic() - checked:.0f} s")
    return time.monotonic() - started
