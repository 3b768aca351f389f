"""`registry query`: exact-match filters over the registry, as JSON-ready dicts.

Every filter is an equality on an indexed column (or an EXISTS over indexed
rows for the runs table). The connection is expected to be read-only.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field

from benchpack.results.cache_state import row_cache_state
from benchpack.errors import ConfigError, Problem
from benchpack.registry.rows import COLUMNS
from benchpack.registry.schema import key_json_columns

TABLES = ("runs", "rows", "case-stats", "agent-wrap")

# filter name -> column, per table. A filter missing for a table is an error, not ignored.
_ROW_FILTERS = {
    "pack": "pack_id", "pack_version": "pack_version", "case": "case_id", "model": "model",
    "adapter": "adapter", "fingerprint": "fingerprint", "ok": "ok",
}
# The workload and system keys (schema 4) live on the per-case table.
_STATS_FILTERS = {**{k: v for k, v in _ROW_FILTERS.items() if k != "ok"}, "workload": "workload_key",
                  "system": "system_key"}
_WRAP_FILTERS = {
    "run": "label", "status": "status", "harness": "harness", "provider": "provider",
    "model": "model", "thinking": "thinking_level",
}
FILTER_NAMES = ("pack", "pack_version", "case", "model", "adapter", "run", "fingerprint", "workload", "system", "ok",
                "status", "harness", "provider", "thinking")

_RUN_COLUMNS = (
    "id", "label", "result_dir", "source", "imported_at", "row_count", "ok_count", "packs",
    "hostname", "platform", "cpu_model", "gpu_models", "ram_mb", "hardware_class",
    "runtime_name", "runtime_version", "runtime_mode", "model_id", "model_quantization",
    "model_format", "context_size", "system_key", "system_json",
)
_STATS_COLUMNS = (
    "pack_id", "pack_version", "case_id", "adapter", "model", "row_count", "ok_count",
    "scored_count", "passed_count", "median_wall_s", "median_ttft_s", "median_prefill_tps",
    "median_decode_rate", "median_decode_tps", "median_total_tps", "median_output_tokens", "median_prompt_tokens",
    "median_cached_prompt_tokens", "prompt_token_rows", "cached_prompt_rows", "fingerprint",
    "fingerprint_complete", "fingerprint_json", "workload_key", "workload_complete", "workload_json",
    "system_key", "cache_state",
)
_WRAP_COLUMNS = (
    "label", "date", "status", "harness", "provider", "model", "thinking_level", "runner",
    "local_model", "transcript_captured", "electron_precondition_ok", "duration_s", "notes",
    "source", "imported_at",
)
_BOOLEAN = {"ok", "scoring_passed", "fingerprint_complete", "workload_complete", "local_model", "transcript_captured",
            "electron_precondition_ok"}


@dataclass
class Query:
    table: str = "rows"
    filters: dict = field(default_factory=dict)  # filter name -> exact value (None = unset)
    limit: int | None = 1000
    include_raw: bool = False


@dataclass(frozen=True)
class Sql:
    text: str
    params: tuple


def _set_filters(query: Query) -> dict:
    return {k: v for k, v in query.filters.items() if v is not None}


def _reject(table: str, names: list[str]) -> None:
    if names:
        raise ConfigError([
            Problem("registry query", f"--{n.replace('_', '-')}", f"does not apply to --table {table}")
            for n in names
        ])


def build_sql(query: Query) -> Sql:
    """The SELECT for a query; column names come from fixed tables, values are bound."""
    if query.table not in TABLES:
        raise ConfigError(Problem("registry query", "--table", f"must be one of {', '.join(TABLES)}"))
    filters = _set_filters(query)
    where: list[str] = []
    params: list = []
    if query.table == "agent-wrap":
        _reject(query.table, [n for n in filters if n not in _WRAP_FILTERS])
        for name, value in filters.items():
            where.append(f"{_WRAP_FILTERS[name]} = ?")
            params.append(value)
        text = f"SELECT {', '.join(_WRAP_COLUMNS)}, raw_json FROM agent_wrap_runs"
        order = " ORDER BY date, label"
    else:
        _reject(query.table, [n for n in filters if n in ("status", "harness", "provider", "thinking")])
        if "run" in filters:
            where.append("{alias}run_id IN (SELECT id FROM runs WHERE label = ?)")
            params.append(filters.pop("run"))
        if query.table == "runs":
            # Runs containing matching rows, answered from the small per-case table.
            inner, inner_params = [], []
            for name, value in filters.items():
                if name == "ok":
                    inner.append("s.ok_count > 0" if value else "s.ok_count < s.row_count")
                else:
                    inner.append(f"s.{_STATS_FILTERS[name]} = ?")
                    inner_params.append(value)
            if inner:
                where.append(f"id IN (SELECT s.run_id FROM result_case_stats s WHERE {' AND '.join(inner)})")
                params.extend(inner_params)
            where = [w.replace("{alias}run_id", "id") for w in where]
            text = f"SELECT {', '.join(_RUN_COLUMNS)} FROM runs"
            order = " ORDER BY id"
        else:
            allowed = _ROW_FILTERS if query.table == "rows" else _STATS_FILTERS
            _reject(query.table, [n for n in filters if n not in allowed])
            for name, value in filters.items():
                if name == "ok":
                    # A literal, not a parameter, so the partial index on failed rows can serve it.
                    where.append(f"{{alias}}ok = {1 if value else 0}")
                    continue
                where.append(f"{{alias}}{allowed[name]} = ?")
                params.append(value)
            where = [w.replace("{alias}", "t.") for w in where]
            if query.table == "rows":
                columns = ", ".join(f"t.{c}" for c in ("line", *COLUMNS, "fingerprint"))
                raw = ", t.raw_json" if query.include_raw else ""
                # What the row's cache state needs besides its token counts (cache_state.py).
                raw += ", json_extract(t.raw_json, '$.prompt_cache') AS _prompt_cache"
                # A failed-rows filter is served by the small partial index, whatever the other filters.
                hint = " INDEXED BY result_rows_failed" if filters.get("ok") == 0 else ""
                text = (f"SELECT t.id, runs.label AS run, {columns}{raw} FROM result_rows t{hint}"
                        " JOIN runs ON runs.id = t.run_id")
                order = " ORDER BY t.id"
            else:
                stored, joins = key_json_columns("t")  # the JSON columns live once per value in key_json
                columns = ", ".join(f"{stored[c]} AS {c}" if c in stored else f"t.{c}" for c in _STATS_COLUMNS)
                text = (f"SELECT runs.label AS run, {columns} FROM result_case_stats t JOIN runs ON runs.id = t.run_id"
                        + joins)
                order = " ORDER BY t.run_id, t.pack_id, t.pack_version, t.case_id, t.adapter, t.model"
    if where:
        text += " WHERE " + " AND ".join(where)
    text += order
    if query.limit:
        text += " LIMIT ?"
        params.append(int(query.limit))
    return Sql(text, tuple(params))


def _converter(name: str):
    if name in _BOOLEAN:
        return lambda v: None if v is None else bool(v)
    if name in ("raw_json", "fingerprint_json", "workload_json", "system_json"):
        return lambda v: None if v is None else json.loads(v)
    return None


def run_query(conn: sqlite3.Connection, query: Query) -> list[dict]:
    sql = build_sql(query)
    cursor = conn.execute(sql.text, sql.params)
    names = [d[0] for d in cursor.description]
    renamed = {"raw_json": "row", "fingerprint_json": "fingerprint_fields", "workload_json": "workload_fields",
               "system_json": "system_fields"}
    keys = [renamed.get(n, n) for n in names]
    # Convert only the few boolean/JSON columns; everything else is already JSON-ready.
    fixes = [(key, conv) for key, conv in ((k, _converter(n)) for k, n in zip(keys, names)) if conv]
    with_state = "_prompt_cache" in keys
    records = []
    for record in cursor:
        item = dict(zip(keys, record))
        for key, conv in fixes:
            item[key] = conv(item[key])
        if with_state:
            item["cache_state"] = _row_state(item)
        records.append(item)
    return records


def _row_state(item: dict) -> str:
    """`cold` / `cached` / `unknown` for a rows record, so a script reading
    `prefill_tps` can tell a rate from a prompt served from cache."""
    policy = item.pop("_prompt_cache")
    return row_cache_state({
        "tokens": {"prompt": item.get("prompt_tokens"), "cached_prompt": item.get("cached_prompt_tokens")},
        "prompt_cache": json.loads(policy) if isinstance(policy, str) else None,
    })


def explain_plan(conn: sqlite3.Connection, query: Query) -> list[str]:
    sql = build_sql(query)
    return [row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + sql.text, sql.params)]
