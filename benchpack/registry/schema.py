"""The registry's SQLite schema, its versions, and forward migration.

Version 1 indexes runs, result rows and per-run/case medians. Version 2 adds
nullable comparability anchors from run metadata, prompt/cache coverage
medians and the comparability fingerprint. Version 3 adds `agent_wrap_runs`.
Version 4 adds the workload and system keys (fingerprint.workload_key /
system_key) to case stats and runs, and the load-lane row columns
`depth_tokens`, `concurrency`, `arrival_rate`. Version 5 adds the decode-rate
median. Version 6 stores each case's fingerprint and workload JSON once per
distinct value (`key_json`), referenced by id from `result_case_stats`.
Each step is DDL plus (for 1 -> 2, 3 -> 4 and 4 -> 5) a backfill computed from
data the database already holds, so an old registry is upgraded in place with
nothing lost.
"""

from __future__ import annotations

import json
import sqlite3
from contextlib import contextmanager
from pathlib import Path
from typing import Callable

from benchpack.errors import BenchpackError, Problem
from benchpack.registry import fingerprint as fp
from benchpack.registry.casestats import median

SCHEMA_VERSION = 6
# For a new file only (SQLite fixes the page size when the first table is
# made). Rows hold ~1 KB of raw JSON; 64 KiB pages make bulk inserts and
# index maintenance far cheaper (fewer page splits and balance operations)
# at the cost of ~1 MB minimum file size; readers memory-map the file
# (open_read_only) so scattered row lookups do not copy whole pages.
NEW_FILE_PAGE_SIZE = 65536
READ_MMAP_BYTES = 1 << 34

V1_DDL = """
CREATE TABLE registry_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE runs (
    id INTEGER PRIMARY KEY,
    result_dir TEXT NOT NULL UNIQUE,
    label TEXT NOT NULL,
    source TEXT NOT NULL,
    imported_at TEXT NOT NULL,
    row_count INTEGER NOT NULL,
    ok_count INTEGER NOT NULL,
    packs TEXT NOT NULL,
    hostname TEXT, platform TEXT, cpu_model TEXT, gpu_models TEXT, ram_mb INTEGER,
    hardware_json TEXT,
    run_metadata_json TEXT
);
CREATE TABLE result_rows (
    id INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    line INTEGER NOT NULL,
    pack_id TEXT NOT NULL, pack_version TEXT NOT NULL, case_id TEXT NOT NULL,
    adapter TEXT NOT NULL, model TEXT NOT NULL, endpoint TEXT,
    ok INTEGER NOT NULL, error TEXT,
    wall_s REAL, ttft_s REAL, prefill_tps REAL, decode_tps REAL, total_tps REAL,
    ttfb_s REAL, ttft_any_s REAL, tpot_s REAL,
    prompt_tokens INTEGER, output_tokens INTEGER, cached_prompt_tokens INTEGER, token_source TEXT,
    scoring_mode TEXT, scoring_passed INTEGER,
    repo_task_status TEXT, verify_exit_code INTEGER,
    repetition INTEGER,
    raw_json TEXT NOT NULL
);
CREATE INDEX result_rows_run ON result_rows(run_id, case_id);
CREATE INDEX result_rows_pack_case ON result_rows(pack_id, pack_version, case_id, model);
CREATE INDEX result_rows_model ON result_rows(model, case_id);
CREATE TABLE result_case_stats (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    pack_id TEXT NOT NULL, pack_version TEXT NOT NULL, case_id TEXT NOT NULL,
    adapter TEXT NOT NULL, model TEXT NOT NULL,
    row_count INTEGER NOT NULL, ok_count INTEGER NOT NULL,
    scored_count INTEGER NOT NULL, passed_count INTEGER NOT NULL,
    median_wall_s REAL, median_ttft_s REAL, median_prefill_tps REAL,
    median_decode_tps REAL, median_total_tps REAL, median_output_tokens REAL,
    PRIMARY KEY (run_id, pack_id, pack_version, case_id, adapter, model)
);
CREATE INDEX result_case_stats_case ON result_case_stats(pack_id, pack_version, case_id);
CREATE INDEX result_case_stats_model ON result_case_stats(model, case_id);
"""

V2_DDL = """
ALTER TABLE runs ADD COLUMN runtime_name TEXT;
ALTER TABLE runs ADD COLUMN runtime_version TEXT;
ALTER TABLE runs ADD COLUMN runtime_mode TEXT;
ALTER TABLE runs ADD COLUMN model_id TEXT;
ALTER TABLE runs ADD COLUMN model_quantization TEXT;
ALTER TABLE runs ADD COLUMN model_format TEXT;
ALTER TABLE runs ADD COLUMN context_size INTEGER;
ALTER TABLE runs ADD COLUMN hardware_class TEXT;
ALTER TABLE result_rows ADD COLUMN fingerprint TEXT;
CREATE INDEX result_rows_fingerprint ON result_rows(fingerprint);
CREATE INDEX result_rows_adapter ON result_rows(adapter);
CREATE INDEX result_rows_failed ON result_rows(run_id) WHERE ok = 0;
ALTER TABLE result_case_stats ADD COLUMN median_prompt_tokens REAL;
ALTER TABLE result_case_stats ADD COLUMN median_cached_prompt_tokens REAL;
ALTER TABLE result_case_stats ADD COLUMN prompt_token_rows INTEGER NOT NULL DEFAULT 0;
ALTER TABLE result_case_stats ADD COLUMN cached_prompt_rows INTEGER NOT NULL DEFAULT 0;
ALTER TABLE result_case_stats ADD COLUMN fingerprint TEXT;
ALTER TABLE result_case_stats ADD COLUMN fingerprint_complete INTEGER;
ALTER TABLE result_case_stats ADD COLUMN fingerprint_json TEXT;
CREATE INDEX result_case_stats_fingerprint ON result_case_stats(fingerprint);
"""

V3_DDL = """
CREATE TABLE agent_wrap_runs (
    label TEXT PRIMARY KEY,
    date TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('pass', 'fail')),
    harness TEXT NOT NULL,
    provider TEXT NOT NULL,
    model TEXT NOT NULL,
    thinking_level TEXT,
    runner TEXT,
    local_model INTEGER,
    transcript_captured INTEGER,
    electron_precondition_ok INTEGER,
    duration_s REAL,
    notes TEXT,
    source TEXT NOT NULL,
    imported_at TEXT NOT NULL,
    raw_json TEXT NOT NULL
);
CREATE INDEX agent_wrap_runs_filters ON agent_wrap_runs(status, harness, provider, model, thinking_level);
CREATE INDEX agent_wrap_runs_model ON agent_wrap_runs(model);
"""

V4_DDL = """
ALTER TABLE result_rows ADD COLUMN depth_tokens INTEGER;
ALTER TABLE result_rows ADD COLUMN concurrency INTEGER;
ALTER TABLE result_rows ADD COLUMN arrival_rate REAL;
ALTER TABLE result_case_stats ADD COLUMN workload_key TEXT;
ALTER TABLE result_case_stats ADD COLUMN workload_complete INTEGER;
ALTER TABLE result_case_stats ADD COLUMN workload_json TEXT;
ALTER TABLE result_case_stats ADD COLUMN system_key TEXT;
ALTER TABLE result_case_stats ADD COLUMN cache_state TEXT;
ALTER TABLE runs ADD COLUMN system_key TEXT;
ALTER TABLE runs ADD COLUMN system_json TEXT;
CREATE INDEX result_case_stats_workload ON result_case_stats(workload_key, system_key);
CREATE INDEX runs_system ON runs(system_key);
"""

# Anchors read from run-metadata.json; (column, candidate paths in order).
ANCHOR_PATHS: dict[str, tuple[str, ...]] = {
    "runtime_name": ("runtime.name",),
    "runtime_version": ("runtime.version",),
    "runtime_mode": ("runtime.mode", "runtime.artifact_mode", "runtime.provenance"),
    "model_id": ("model.id", "model.name"),
    "model_quantization": ("model.quantization",),
    "model_format": ("model.format", "model.artifact"),
    "context_size": ("model.context", "runtime.context", "runtime.context_size"),
}


def metadata_anchors(run_metadata: dict | None) -> dict:
    """Comparability anchors from run-metadata.json; absent ones are None."""
    anchors = {}
    for column, paths in ANCHOR_PATHS.items():
        value = next((v for v in (fp.metadata_value(run_metadata, p) for p in paths) if v is not None), None)
        if column == "context_size":
            value = int(value) if value is not None and value.isdigit() else None
        anchors[column] = value
    return anchors


def _backfill_v2(conn: sqlite3.Connection) -> None:
    """Fill the version-2 columns of rows imported under version 1."""
    runs = conn.execute("SELECT id, hardware_json, run_metadata_json FROM runs").fetchall()
    for run_id, hardware_json, metadata_json in runs:
        hardware = json.loads(hardware_json) if hardware_json else None
        metadata = json.loads(metadata_json) if metadata_json else None
        anchors = metadata_anchors(metadata)
        anchors["hardware_class"] = fp.hardware_class(hardware)
        conn.execute(
            "UPDATE runs SET " + ", ".join(f"{c} = ?" for c in anchors) + " WHERE id = ?",
            [*anchors.values(), run_id],
        )
        groups = conn.execute(
            "SELECT DISTINCT pack_id, pack_version, case_id, model FROM result_rows WHERE run_id = ?",
            (run_id,),
        ).fetchall()
        for pack_id, pack_version, case_id, model in groups:
            print_ = fp.compute(fp.fingerprint_inputs(pack_id, pack_version, case_id, model, metadata, hardware))
            conn.execute(
                "UPDATE result_rows SET fingerprint = ? WHERE run_id = ? AND pack_id = ?"
                " AND pack_version = ? AND case_id = ? AND model = ?",
                (print_.digest, run_id, pack_id, pack_version, case_id, model),
            )
            conn.execute(
                "UPDATE result_case_stats SET fingerprint = ?, fingerprint_complete = ?, fingerprint_json = ?"
                " WHERE run_id = ? AND pack_id = ? AND pack_version = ? AND case_id = ? AND model = ?",
                (print_.digest, int(print_.complete), print_.to_json(), run_id, pack_id, pack_version, case_id, model),
            )
    # Prompt/cache medians need every row's tokens; recompute them from the stored columns.
    stats = conn.execute(
        "SELECT run_id, pack_id, pack_version, case_id, adapter, model FROM result_case_stats"
    ).fetchall()
    for key in stats:
        prompts = [r[0] for r in conn.execute(
            "SELECT prompt_tokens FROM result_rows WHERE run_id = ? AND pack_id = ? AND pack_version = ?"
            " AND case_id = ? AND adapter = ? AND model = ? AND ok = 1 AND prompt_tokens IS NOT NULL", key)]
        cached = [r[0] for r in conn.execute(
            "SELECT cached_prompt_tokens FROM result_rows WHERE run_id = ? AND pack_id = ? AND pack_version = ?"
            " AND case_id = ? AND adapter = ? AND model = ? AND ok = 1 AND cached_prompt_tokens IS NOT NULL", key)]
        conn.execute(
            "UPDATE result_case_stats SET median_prompt_tokens = ?, median_cached_prompt_tokens = ?,"
            " prompt_token_rows = ?, cached_prompt_rows = ? WHERE run_id = ? AND pack_id = ?"
            " AND pack_version = ? AND case_id = ? AND adapter = ? AND model = ?",
            (median(prompts), median(cached), len(prompts), len(cached), *key),
        )


def _lane_value(column: str, kind: str) -> str:
    """SQL for a lane field of the stored row JSON, only when it has the column's type."""
    types = "('integer')" if kind == "integer" else "('integer', 'real')"
    return (f"CASE WHEN json_type(raw_json, '$.{column}') IN {types} "
            f"THEN json_extract(raw_json, '$.{column}') END")


def _backfill_v4(conn: sqlite3.Connection) -> None:
    """Keys and lane columns for data imported under version 3, from the stored rows and run files."""
    from benchpack.packs.case_content import case_spec
    from benchpack.registry.casestate import state_of_sql_rows

    conn.execute(
        "UPDATE result_rows SET depth_tokens = " + _lane_value("depth_tokens", "integer")
        + ", concurrency = " + _lane_value("concurrency", "integer")
        + ", arrival_rate = " + _lane_value("arrival_rate", "real")
        + " WHERE raw_json LIKE '%\"depth_tokens\"%' OR raw_json LIKE '%\"concurrency\"%'"
        " OR raw_json LIKE '%\"arrival_rate\"%'"
    )
    runs = conn.execute("SELECT id, hardware_json, run_metadata_json FROM runs").fetchall()
    for run_id, hardware_json, metadata_json in runs:
        hardware = json.loads(hardware_json) if hardware_json else None
        metadata = json.loads(metadata_json) if metadata_json else None
        groups = conn.execute(
            "SELECT pack_id, pack_version, case_id, adapter, model FROM result_case_stats WHERE run_id = ?", (run_id,)
        ).fetchall()
        system = None
        for key in groups:
            rows = conn.execute(
                "SELECT ok, prompt_tokens, cached_prompt_tokens, json_extract(raw_json, '$.prompt_cache'), line"
                " FROM result_rows WHERE run_id = ? AND pack_id = ? AND pack_version = ? AND case_id = ?"
                " AND adapter = ? AND model = ? ORDER BY line", (run_id, *key)).fetchall()
            first = conn.execute("SELECT raw_json FROM result_rows WHERE run_id = ? AND line = ?",
                                 (run_id, rows[0][4])).fetchone()[0] if rows else "{}"
            if system is None:
                system = fp.system_key(metadata, hardware, key[4])
            workload = fp.workload_key([json.loads(first)], case_spec(key[0], key[1], key[2]),
                                       cache_state=state_of_sql_rows(rows))
            conn.execute(
                "UPDATE result_case_stats SET workload_key = ?, workload_complete = ?, workload_json = ?,"
                " system_key = ?, cache_state = ? WHERE run_id = ? AND pack_id = ? AND pack_version = ?"
                " AND case_id = ? AND adapter = ? AND model = ?",
                (workload.digest, int(workload.complete), json.dumps(workload.to_dict(), sort_keys=True),
                 system.digest, workload.fields["cache_state"], run_id, *key))
        system = system or fp.system_key(metadata, hardware)
        conn.execute("UPDATE runs SET system_key = ?, system_json = ? WHERE id = ?",
                     (system.digest, json.dumps(system.to_dict(), sort_keys=True), run_id))


# The decode figure, 1/tpot_s (benchpack.results.metrics): the median over a case's ok rows of each
# row's rate. median_decode_tps stays: the legacy output ÷ (wall − TTFT), never ranked.
V5_DDL = """
ALTER TABLE result_case_stats ADD COLUMN median_decode_rate REAL;
"""


def _backfill_v5(conn: sqlite3.Connection) -> None:
    from statistics import median

    groups = conn.execute("SELECT run_id, pack_id, pack_version, case_id, adapter, model FROM result_case_stats"
                          ).fetchall()
    for key in groups:
        rates = [1 / t for (t,) in conn.execute(
            "SELECT tpot_s FROM result_rows WHERE run_id = ? AND pack_id = ? AND pack_version = ? AND case_id = ?"
            " AND adapter = ? AND model = ? AND ok = 1 AND tpot_s > 0", key)]
        if rates:
            conn.execute("UPDATE result_case_stats SET median_decode_rate = ? WHERE run_id = ? AND pack_id = ?"
                         " AND pack_version = ? AND case_id = ? AND adapter = ? AND model = ?",
                         (float(median(rates)), *key))


# The fingerprint and workload JSON of a case (its key's inputs, kept beside the digest) once per distinct
# value: runs of one machine, model and pack repeat the same ~1.8 KB per case, which made the stats rows of
# a many-directory import ~15% of its bytes (issue 34). Readers join it back (KEY_JSON_COLUMNS).
# No REFERENCES: a foreign key would make every delete from key_json scan result_case_stats.
V6_DDL = """
CREATE TABLE key_json (id INTEGER PRIMARY KEY, json TEXT NOT NULL UNIQUE);
ALTER TABLE result_case_stats ADD COLUMN fingerprint_json_id INTEGER;
ALTER TABLE result_case_stats ADD COLUMN workload_json_id INTEGER;
INSERT INTO key_json (json)
    SELECT fingerprint_json FROM result_case_stats WHERE fingerprint_json IS NOT NULL
    UNION SELECT workload_json FROM result_case_stats WHERE workload_json IS NOT NULL;
UPDATE result_case_stats SET
    fingerprint_json_id = (SELECT id FROM key_json WHERE json = fingerprint_json),
    workload_json_id = (SELECT id FROM key_json WHERE json = workload_json);
ALTER TABLE result_case_stats DROP COLUMN fingerprint_json;
ALTER TABLE result_case_stats DROP COLUMN workload_json
"""

def key_json_columns(alias: str) -> tuple[dict[str, str], str]:
    """How a reader of result_case_stats (aliased `alias`) gets `fingerprint_json` and `workload_json` back:
    ({column name: SQL expression}, the LEFT JOINs to append after `FROM result_case_stats alias`)."""
    return ({"fingerprint_json": "key_fp.json", "workload_json": "key_wl.json"},
            f" LEFT JOIN key_json key_fp ON key_fp.id = {alias}.fingerprint_json_id"
            f" LEFT JOIN key_json key_wl ON key_wl.id = {alias}.workload_json_id")


def drop_unused_key_json(conn: sqlite3.Connection) -> None:
    """Delete the key_json values no case-stats row refers to any more (after runs were re-imported)."""
    conn.execute("DELETE FROM key_json WHERE id NOT IN (SELECT fingerprint_json_id FROM result_case_stats"
                 " WHERE fingerprint_json_id IS NOT NULL) AND id NOT IN (SELECT workload_json_id"
                 " FROM result_case_stats WHERE workload_json_id IS NOT NULL)")


MIGRATIONS: dict[int, tuple[str, Callable[[sqlite3.Connection], None] | None]] = {
    1: (V1_DDL, None),
    2: (V2_DDL, _backfill_v2),
    3: (V3_DDL, None),
    4: (V4_DDL, _backfill_v4),
    5: (V5_DDL, _backfill_v5),
    6: (V6_DDL, None),
}


def schema_version(conn: sqlite3.Connection) -> int:
    """0 for an empty database."""
    has_meta = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'registry_meta'"
    ).fetchone()
    if not has_meta:
        return 0
    row = conn.execute("SELECT value FROM registry_meta WHERE key = 'schema_version'").fetchone()
    return int(row[0]) if row else 0


def _refuse_newer(db: Path, version: int) -> None:
    if version > SCHEMA_VERSION:
        raise BenchpackError(Problem(
            str(db), "schema_version",
            f"database schema version {version} is newer than this benchpack supports "
            f"({SCHEMA_VERSION}); upgrade benchpack to use it",
        ))


def migrate(conn: sqlite3.Connection, db: Path, target: int = SCHEMA_VERSION) -> int:
    """Bring the database forward to `target` inside one transaction; returns the old version."""
    current = schema_version(conn)
    _refuse_newer(db, current)
    if current >= target:
        return current
    with transaction(conn):
        for version in range(current + 1, target + 1):
            ddl, backfill = MIGRATIONS[version]
            for statement in ddl.split(";"):
                if statement.strip():
                    conn.execute(statement)
            if backfill is not None:
                backfill(conn)
            conn.execute(
                "INSERT INTO registry_meta (key, value) VALUES ('schema_version', ?)"
                " ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (str(version),),
            )
    return current


BULK_LOADED_TABLES = ("result_rows", "result_case_stats")


def drop_row_indexes_if_empty(conn: sqlite3.Connection) -> list[str]:
    """Inside a transaction: drop the secondary indexes of each child table that holds no rows.

    Returns the statements that recreate them. A bulk load into an empty table
    followed by CREATE INDEX (one sort per index) measured ~2x cheaper than
    maintaining the B-trees row by row (for result_case_stats, one row per
    run and case, that was ~1.6 s of a 1M-row import from 2,000 result
    directories). A rollback restores the indexes."""
    recreate = []
    for table in BULK_LOADED_TABLES:
        if conn.execute(f'SELECT 1 FROM "{table}" LIMIT 1').fetchone():
            continue
        indexes = conn.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND sql IS NOT NULL", (table,)
        ).fetchall()
        for name, _ in indexes:
            conn.execute(f'DROP INDEX "{name}"')
        recreate += [sql for _, sql in indexes]
    return recreate


@contextmanager
def transaction(conn: sqlite3.Connection):
    """One explicit transaction; DDL included (Python's implicit BEGIN skips DDL)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def _connect(target: str, uri: bool = False) -> sqlite3.Connection:
    conn = sqlite3.connect(target, uri=uri, isolation_level=None)
    conn.execute("PRAGMA foreign_keys = ON")
    return conn


def open_for_write(db: str | Path) -> sqlite3.Connection:
    """Open (creating if needed) and migrate to the current schema."""
    path = Path(db)
    if path.exists() and path.is_dir():
        raise BenchpackError(Problem(str(path), "", "is a directory, not a SQLite database"))
    if not path.parent.exists():
        raise BenchpackError(Problem(str(path), "", "parent directory does not exist"))
    try:
        conn = _connect(str(path))
        if schema_version(conn) == 0 and conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchone():
            conn.close()
            raise BenchpackError(Problem(str(path), "", "is a SQLite database but not a benchpack registry; "
                                         "refusing to add tables to it"))
        if schema_version(conn) == 0:
            conn.execute(f"PRAGMA page_size = {NEW_FILE_PAGE_SIZE}")
        migrate(conn, path)
    except sqlite3.DatabaseError as exc:
        raise BenchpackError(Problem(str(path), "", f"not a usable SQLite database ({exc})")) from None
    return conn


def migrate_file(db: str | Path) -> int:
    """`registry migrate`: upgrade an existing registry in place; returns the old version."""
    path = Path(db)
    if not path.is_file():
        raise BenchpackError(Problem(str(path), "", "no such registry database"))
    conn = _connect(str(path))
    try:
        if schema_version(conn) == 0:
            raise BenchpackError(Problem(str(path), "", "not a benchpack registry (no schema version)"))
        return migrate(conn, path)
    except sqlite3.DatabaseError as exc:
        raise BenchpackError(Problem(str(path), "", f"not a usable SQLite database ({exc})")) from None
    finally:
        conn.close()


def open_read_only(db: str | Path) -> sqlite3.Connection:
    """Open with SQLite's read-only URI mode: nothing here can change the file."""
    path = Path(db)
    if not path.is_file():
        raise BenchpackError(Problem(str(path), "", "no such registry database"))
    uri = f"{path.resolve().as_uri()}?mode=ro"
    try:
        conn = _connect(uri, uri=True)
        version = schema_version(conn)
    except sqlite3.DatabaseError as exc:
        raise BenchpackError(Problem(str(path), "", f"not a usable SQLite database ({exc})")) from None
    _refuse_newer(path, version)
    if version == 0:
        conn.close()
        raise BenchpackError(Problem(str(path), "", "not a benchpack registry (no schema version)"))
    if version < SCHEMA_VERSION:
        conn.close()
        raise BenchpackError(Problem(
            str(path), "schema_version",
            f"database schema version {version} is older than {SCHEMA_VERSION}; "
            f"run `benchpack registry migrate --db {path}` first",
        ))
    # Memory-mapped reads: a query that visits scattered rows touches a few
    # bytes of each 64 KiB page instead of copying whole pages into the cache
    # (the failed-rows query over 1M rows: ~100 ms copied, ~27 ms mapped).
    # SQLite caps this at its compiled maximum.
    conn.execute(f"PRAGMA mmap_size = {READ_MMAP_BYTES}")
    return conn
