"""Writing many new model instances in the caller's transaction: COPY on PostgreSQL, bulk_create elsewhere.

Publishing (runs, rows, cases) and the leaderboard refresh (entries) write thousands of rows at a time.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from django.db import connection, models

# Rows per INSERT statement: under SQLite's 32,766 bound parameters at a case row's 30 columns.
BATCH = 1000


def insert(model, objects: Iterable, *, with_ids: bool = False) -> list:
    """Write new model instances: COPY on PostgreSQL (`_copy`), bulk_create elsewhere (SQLite, whose
    INSERT … RETURNING gives the ids). Returns the instances with their ids when `with_ids`."""
    if connection.vendor == "postgresql":
        return _copy(model, objects, with_ids=with_ids)
    written = model.objects.bulk_create(objects, batch_size=BATCH)
    return written if with_ids else []


def _copy(model, objects: Iterable, *, with_ids: bool = False) -> list:
    """Write model instances with PostgreSQL's COPY (psycopg 3's `cursor.copy`), streamed row by row.

    bulk_create on PostgreSQL sends each column as an array parameter that psycopg quotes client-side (a
    regex per string element): profiled at 20k case rows, bulk_create was 113 s of publish's 125 s (~145 case rows/s).
    COPY sends each value in its text form once. Values are what bulk_create would store: `auto_now_add`
    is set by the field's own pre_save, a JSON column is json.dumps of the value (Django's JSONField
    encodes with json.dumps too; None is SQL NULL), the rest as psycopg dumps them. `with_ids`: the ids
    are taken from the table's sequence first (one nextval per row, in one statement), so the caller gets
    its instances back with their pks, as bulk_create's RETURNING gives them; without, the table assigns
    them. Same transaction as the caller's: a failure leaves nothing written.
    """
    objects = objects if isinstance(objects, list) else list(objects) if with_ids else objects
    fields = [f for f in model._meta.concrete_fields if with_ids or not f.primary_key]
    json_columns = {f.attname for f in fields if isinstance(f, models.JSONField)}
    auto_now = [f for f in fields if isinstance(f, models.DateField) and (f.auto_now or f.auto_now_add)]
    names = [f.attname for f in fields]
    table = connection.ops.quote_name(model._meta.db_table)
    columns = ", ".join(connection.ops.quote_name(f.column) for f in fields)
    encoded: dict[int, tuple] = {}

    def dumps(value, _dumps=json.dumps):
        """json.dumps, once per object: the runs of one system share their hardware, system fields and
        case fingerprints, objects kept (so their ids stay theirs) for this call's length."""
        found = encoded.get(id(value))
        if found is None or found[0] is not value:
            found = encoded[id(value)] = (value, _dumps(value))
        return found[1]

    with connection.cursor() as cursor:
        if with_ids and objects:
            pk = model._meta.pk.column
            cursor.execute("SELECT nextval(pg_get_serial_sequence(%s, %s)) FROM generate_series(1, %s)",
                           [model._meta.db_table, pk, len(objects)])
            for obj, (pk_value,) in zip(objects, cursor.fetchall()):
                obj.pk = pk_value
        with cursor.cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
            for obj in objects:
                for f in auto_now:
                    f.pre_save(obj, add=True)
                values = obj.__dict__
                copy.write_row([(None if values[n] is None else dumps(values[n])) if n in json_columns else values[n]
                                for n in names])
    if with_ids:
        for obj in objects:
            obj._state.adding = False
            obj._state.db = connection.alias
    return objects if with_ids else []
