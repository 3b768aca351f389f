"""Schema versions 1 -> 2 -> 3 -> 4 -> 5: old registries upgrade in place with data kept."""

import json
import sqlite3
from pathlib import Path

import pytest

from benchpack.cli import main
from benchpack.errors import BenchpackError
from benchpack.registry import schema
from benchpack.registry.casestats import METRICS, CaseStatsBuilder
from benchpack.registry.importer import RunSource, import_into
from benchpack.registry.query import Query, run_query
from benchpack.registry.rows import COLUMNS, LANE, normalize_row
from tests.data_paths import REAL_RESULTS

REAL_DIRS = sorted(p for p in REAL_RESULTS.iterdir() if p.is_dir())
V1_COLUMNS = tuple(c for c in COLUMNS if c not in LANE)  # the lane columns came with version 4
V1_ROW_COLUMNS = ("run_id", "line", *V1_COLUMNS, "raw_json")
V4_CASE_COLUMNS = ("workload_key", "workload_complete", "workload_json", "system_key", "cache_state",
                   "median_decode_rate")  # the last came with version 5


def build_v1(path: Path) -> None:
    """A version-1 registry holding the real results, written with the version-1 columns only."""
    conn = schema._connect(str(path))
    schema.migrate(conn, path, target=1)
    conn.execute("BEGIN")
    for run_id, run in enumerate(REAL_DIRS, start=1):
        lines = (run / "run.jsonl").read_text().splitlines()
        hardware = (run / "hardware.json").read_text()
        conn.execute(
            "INSERT INTO runs (id, result_dir, label, source, imported_at, row_count, ok_count, packs,"
            " cpu_model, ram_mb, hardware_json) VALUES (?, ?, ?, 'result-dir', '2026-05-01', ?, ?, '', ?, ?, ?)",
            (run_id, str(run), run.name, len(lines), len(lines), "Apple M5 Max", 65536, hardware),
        )
        builder = CaseStatsBuilder()
        for number, line in enumerate(lines, start=1):
            values = normalize_row(json.loads(line))[:len(V1_COLUMNS)]
            conn.execute(f"INSERT INTO result_rows ({', '.join(V1_ROW_COLUMNS)}) VALUES "
                         f"({', '.join('?' * len(V1_ROW_COLUMNS))})", (run_id, number, *values, line))
            builder.add(values[:5], values[COLUMNS.index("ok")], None, [None] * len(METRICS))
        for stats in builder.build():
            conn.execute("INSERT INTO result_case_stats (run_id, pack_id, pack_version, case_id, adapter, model,"
                         " row_count, ok_count, scored_count, passed_count) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, 0)",
                         (run_id, *stats.key, stats.row_count, stats.ok_count))
    conn.execute("COMMIT")
    conn.close()


def build_v3(path: Path) -> None:
    """A version-3 registry: imported by today's importer, then the version-4 columns taken away."""
    conn = schema._connect(str(path))
    schema.migrate(conn, path)
    import_into(conn, [RunSource(d) for d in REAL_DIRS])
    conn.execute("DROP INDEX result_case_stats_workload")
    conn.execute("DROP INDEX runs_system")
    for table, columns in (("result_rows", LANE), ("result_case_stats", V4_CASE_COLUMNS),
                           ("runs", ("system_key", "system_json"))):
        for column in columns:
            conn.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
    conn.execute("UPDATE registry_meta SET value = '3' WHERE key = 'schema_version'")
    conn.close()


def table_rows(path: Path, sql: str) -> list:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def test_it_upgrades_a_version_1_registry_and_backfills_anchors_and_fingerprints(tmp_path):
    db = tmp_path / "v1.sqlite"
    build_v1(db)
    raw_before = table_rows(db, "SELECT run_id, line, raw_json FROM result_rows ORDER BY run_id, line")
    assert schema.migrate_file(db) == 1
    assert table_rows(db, "SELECT run_id, line, raw_json FROM result_rows ORDER BY run_id, line") == raw_before
    conn = schema.open_read_only(db)
    assert schema.schema_version(conn) == schema.SCHEMA_VERSION
    stats = run_query(conn, Query(table="case-stats", filters={"run": "2026-04-29-llama-server-runtime", "case": "long"}))
    assert stats[0]["median_prompt_tokens"] == 811 and stats[0]["prompt_token_rows"] == 3
    assert stats[0]["fingerprint_fields"]["fields"]["hardware_class"] == "apple-m5-max-64gb"
    assert len(run_query(conn, Query(filters={"fingerprint": stats[0]["fingerprint"]}))) == 3
    assert run_query(conn, Query(table="runs", limit=1))[0]["hardware_class"] == "apple-m5-max-64gb"
    assert run_query(conn, Query(table="agent-wrap")) == []


def test_it_upgrades_a_version_3_registry_with_data_kept_and_the_same_keys_as_a_fresh_import(tmp_path):
    db, fresh = tmp_path / "v3.sqlite", tmp_path / "fresh.sqlite"
    build_v3(db)
    before = table_rows(db, "SELECT * FROM result_case_stats ORDER BY run_id, case_id")
    conn = schema.open_for_write(db)
    assert schema.schema_version(conn) == schema.SCHEMA_VERSION
    conn.close()
    kept = ", ".join(c[1] for c in sqlite3.connect(db).execute("PRAGMA table_info(result_case_stats)")
                     if c[1] not in V4_CASE_COLUMNS)
    assert table_rows(db, f"SELECT {kept} FROM result_case_stats ORDER BY run_id, case_id") == before
    assert table_rows(db, "SELECT count(*) FROM result_rows") == [(22,)]
    conn = schema.open_for_write(fresh)
    import_into(conn, [RunSource(d) for d in REAL_DIRS])
    conn.close()
    keys = ("SELECT case_id, workload_key, workload_complete, workload_json, system_key, cache_state"
            " FROM result_case_stats ORDER BY run_id, case_id")
    assert table_rows(db, keys) == table_rows(fresh, keys)
    assert table_rows(db, "SELECT system_key, system_json FROM runs ORDER BY id") == \
        table_rows(fresh, "SELECT system_key, system_json FROM runs ORDER BY id")
    assert all(row[0] for row in table_rows(db, "SELECT workload_key FROM result_case_stats"))


def test_it_backfills_lane_columns_from_the_stored_rows(tmp_path):
    db = tmp_path / "v3.sqlite"
    build_v3(db)
    conn = sqlite3.connect(db)
    conn.execute("UPDATE result_rows SET raw_json = json_set(raw_json, '$.depth_tokens', 4096, '$.concurrency', 4,"
                 " '$.arrival_rate', 2.5) WHERE line = 1")
    conn.execute("UPDATE result_rows SET raw_json = json_set(raw_json, '$.depth_tokens', 'deep') WHERE line = 2")
    conn.commit()
    conn.close()
    schema.migrate_file(db)
    lanes = set(table_rows(db, "SELECT line, depth_tokens, concurrency, arrival_rate FROM result_rows"
                               " WHERE line IN (1, 2)"))
    assert (1, 4096, 4, 2.5) in lanes and (2, None, None, None) in lanes  # a string is not a token count


def test_it_gives_the_same_fingerprints_to_migrated_and_fresh_imports(tmp_path):
    old, fresh = tmp_path / "old.sqlite", tmp_path / "fresh.sqlite"
    build_v1(old)
    schema.migrate_file(old)
    conn = schema.open_for_write(fresh)
    import_into(conn, [RunSource(d) for d in REAL_DIRS])
    conn.close()
    sql = "SELECT line, fingerprint FROM result_rows ORDER BY run_id, line"
    assert table_rows(old, sql) == table_rows(fresh, sql)


def test_it_tells_readers_to_migrate_an_old_registry(tmp_path, capsys):
    db = tmp_path / "v1.sqlite"
    build_v1(db)
    assert main(["registry", "query", "--db", str(db)]) == 2
    assert "run `benchpack registry migrate" in capsys.readouterr().err
    assert main(["registry", "migrate", "--db", str(db)]) == 0
    assert f"schema version 1 -> {schema.SCHEMA_VERSION}" in capsys.readouterr().out
    assert main(["registry", "query", "--db", str(db), "--table", "runs"]) == 0


def test_it_refuses_a_registry_from_a_newer_benchpack(tmp_path, capsys):
    db = tmp_path / "future.sqlite"
    schema.open_for_write(db).close()
    conn = sqlite3.connect(db)
    conn.execute("UPDATE registry_meta SET value = '6' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()
    with pytest.raises(BenchpackError, match="schema version 6 is newer than this benchpack supports"):
        schema.open_for_write(db)
    assert main(["registry", "import", "--db", str(db), str(REAL_DIRS[0])]) == 2
    assert main(["registry", "report", "--db", str(db)]) == 2
    assert "upgrade benchpack" in capsys.readouterr().err
