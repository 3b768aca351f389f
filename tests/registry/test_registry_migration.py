"""Schema versions 1 -> ... -> 6: old registries upgrade in place with data kept."""

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from benchpack.cli import main
from benchpack.errors import BenchpackError
from benchpack.registry import schema
from benchpack.registry.casestats import METRICS, CaseStatsBuilder
from benchpack.registry.importer import RunSource, import_into, import_result_dirs
from benchpack.registry.query import Query, run_query
from benchpack.registry.rows import COLUMNS, LANE, normalize_row
from benchpack.registry.site import case_table
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


def build_v5(path: Path) -> None:
    """A version-5 registry holding what today's importer stores for the real results: the version-5
    tables (schema.migrate to 5), filled from a fresh import, the case JSON back in its own columns."""
    fresh = path.with_name(path.name + ".fresh")
    import_result_dirs(fresh, [RunSource(d) for d in REAL_DIRS])
    conn = schema._connect(str(path))
    schema.migrate(conn, path, target=5)
    conn.execute(f"ATTACH '{fresh}' AS fresh")
    conn.execute("BEGIN")
    for table in ("runs", "result_rows"):
        conn.execute(f"INSERT INTO {table} SELECT * FROM fresh.{table}")
    names = [c[1] for c in conn.execute("PRAGMA table_info(result_case_stats)")]
    stored, joins = schema.key_json_columns("s")
    conn.execute(f"INSERT INTO result_case_stats ({', '.join(names)}) SELECT "
                 + ", ".join(stored.get(n, f"s.{n}") for n in names) + " FROM fresh.result_case_stats s" + joins)
    conn.execute("COMMIT")
    conn.execute("DETACH fresh")
    conn.close()
    fresh.unlink()


def build_v3(path: Path) -> None:
    """A version-3 registry: a version-5 one (build_v5), then the version-4 and -5 columns taken away."""
    build_v5(path)
    conn = schema._connect(str(path))
    conn.execute("DROP INDEX result_case_stats_workload")
    conn.execute("DROP INDEX runs_system")
    for table, columns in (("result_rows", LANE), ("result_case_stats", V4_CASE_COLUMNS),
                           ("runs", ("system_key", "system_json"))):
        for column in columns:
            conn.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
    conn.execute("UPDATE registry_meta SET value = '3' WHERE key = 'schema_version'")
    conn.close()


def stats_rows(path: Path, leave_out: tuple = ()) -> list:
    """Every case-stats row as its readers see it: the stored columns, the case JSON by name (from key_json
    from version 6 on), the key_json ids left out (they name, not hold, a value)."""
    conn = sqlite3.connect(path)
    try:
        names = [c[1] for c in conn.execute("PRAGMA table_info(result_case_stats)")]
        joins = ""
        if "fingerprint_json_id" in names:
            stored, joins = schema.key_json_columns("s")
            names = [n for n in names if not n.endswith("_json_id")] + list(stored)
        else:
            stored = {}
        names = sorted(n for n in names if n not in leave_out)
        return conn.execute(f"SELECT {', '.join(stored.get(n, f's.{n}') for n in names)}"
                            f" FROM result_case_stats s{joins} ORDER BY s.run_id, s.case_id").fetchall()
    finally:
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
    before = stats_rows(db)
    conn = schema.open_for_write(db)
    assert schema.schema_version(conn) == schema.SCHEMA_VERSION
    conn.close()
    assert stats_rows(db, leave_out=V4_CASE_COLUMNS) == before
    assert table_rows(db, "SELECT count(*) FROM result_rows") == [(22,)]
    conn = schema.open_for_write(fresh)
    import_into(conn, [RunSource(d) for d in REAL_DIRS])
    conn.close()
    assert stats_rows(db) == stats_rows(fresh)  # workload_json among them
    assert table_rows(db, "SELECT system_key, system_json FROM runs ORDER BY id") == \
        table_rows(fresh, "SELECT system_key, system_json FROM runs ORDER BY id")
    assert all(row[0] for row in table_rows(db, "SELECT workload_key FROM result_case_stats"))


def test_it_upgrades_a_version_5_registry_to_case_json_stored_once_and_reads_it_back_the_same(tmp_path):
    """Version 6 moves each case's fingerprint and workload JSON into key_json, once per distinct value:
    every table, every query and the site read exactly what a fresh import gives."""
    db, fresh = tmp_path / "v5.sqlite", tmp_path / "fresh.sqlite"
    build_v5(db)
    [(prints, workloads, cases)] = table_rows(db, "SELECT count(DISTINCT fingerprint_json),"
                                                  " count(DISTINCT workload_json), count(*) FROM result_case_stats")
    assert workloads < cases  # some cases share a workload JSON
    before = stats_rows(db)
    assert schema.migrate_file(db) == 5
    after = stats_rows(db)
    assert after == before
    import_result_dirs(fresh, [RunSource(d) for d in REAL_DIRS])
    assert after == stats_rows(fresh)
    run_columns = ", ".join(c[1] for c in sqlite3.connect(db).execute("PRAGMA table_info(runs)")
                            if c[1] != "imported_at")  # the two imports ran seconds apart
    for sql in (f"SELECT {run_columns} FROM runs ORDER BY id", "SELECT * FROM result_rows ORDER BY id",
                "SELECT * FROM agent_wrap_runs ORDER BY label"):
        assert table_rows(db, sql) == table_rows(fresh, sql)
    assert table_rows(db, "SELECT count(*) FROM key_json") == [(prints + workloads,)]  # each distinct value once
    assert [c[1] for c in sqlite3.connect(db).execute("PRAGMA table_info(result_case_stats)")] == \
        [c[1] for c in sqlite3.connect(fresh).execute("PRAGMA table_info(result_case_stats)")]
    old, new = schema.open_read_only(db), schema.open_read_only(fresh)
    assert run_query(old, Query(table="case-stats")) == run_query(new, Query(table="case-stats"))
    assert run_query(old, Query(table="case-stats"))[0]["workload_fields"]["kind"] == "workload"
    assert case_table(old) == case_table(new)


def test_a_reimport_keeps_one_copy_of_each_case_json_and_drops_unused_ones(tmp_path):
    db = tmp_path / "r.sqlite"
    import_result_dirs(db, [RunSource(d) for d in REAL_DIRS])
    first = table_rows(db, "SELECT * FROM key_json ORDER BY id")
    import_result_dirs(db, [RunSource(d) for d in REAL_DIRS])  # every run replaced: the same values, found again
    assert table_rows(db, "SELECT * FROM key_json ORDER BY id") == first
    other = tmp_path / "other"
    shutil.copytree(REAL_DIRS[0], other)
    hardware = json.loads((other / "hardware.json").read_text())
    hardware["ram_mb"] = 2 * hardware["ram_mb"]  # another hardware class: other fingerprints
    (other / "hardware.json").write_text(json.dumps(hardware))
    import_result_dirs(db, [RunSource(other)])
    grown = table_rows(db, "SELECT count(*) FROM key_json")[0][0]
    assert grown > len(first)
    shutil.copytree(REAL_DIRS[0], other, dirs_exist_ok=True)  # back to the first run's files: its values unused
    import_result_dirs(db, [RunSource(other)])
    assert table_rows(db, "SELECT * FROM key_json ORDER BY id") == first


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
    conn.execute("UPDATE registry_meta SET value = '7' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()
    with pytest.raises(BenchpackError, match="schema version 7 is newer than this benchpack supports"):
        schema.open_for_write(db)
    assert main(["registry", "import", "--db", str(db), str(REAL_DIRS[0])]) == 2
    assert main(["registry", "report", "--db", str(db)]) == 2
    assert "upgrade benchpack" in capsys.readouterr().err
