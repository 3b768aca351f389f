"""The local registry (schema 4) keeps each case's workload and system keys and the lane columns."""

import json
import shutil

from benchpack.cli import main
from benchpack.registry.importer import RunSource, import_result_dirs
from benchpack.registry.query import Query, run_query
from benchpack.registry.schema import open_read_only
from tests.data_paths import REAL_RESULTS


def _with_lanes(tmp_path, name, **lane):
    target = tmp_path / f"{name}-lanes"
    shutil.copytree(REAL_RESULTS / name, target)
    rows = [json.loads(line) for line in (target / "run.jsonl").read_text().splitlines()]
    (target / "run.jsonl").write_text("".join(json.dumps({**r, **lane}) + "\n" for r in rows))
    return target


def test_imported_case_stats_carry_keys_and_rows_carry_lanes(tmp_path):
    db = tmp_path / "r.sqlite"
    plain = REAL_RESULTS / "2026-04-29-llama-server-runtime"
    deep = _with_lanes(tmp_path, "2026-04-29-llama-server-runtime", depth_tokens=8192, concurrency=4, arrival_rate=1.5)
    import_result_dirs(db, [RunSource(plain), RunSource(deep)])
    conn = open_read_only(db)
    stats = run_query(conn, Query(table="case-stats", filters={"case": "short"}))
    assert len(stats) == 2
    plain_stats, deep_stats = sorted(stats, key=lambda s: s["workload_fields"]["fields"]["depth_tokens"] or 0)
    assert plain_stats["system_key"] == deep_stats["system_key"]  # same machine, model, runtime
    assert plain_stats["workload_key"] != deep_stats["workload_key"]  # but a different question
    assert deep_stats["workload_fields"]["fields"]["concurrency"] == 4
    assert plain_stats["cache_state"] in ("cold", "cached", "unknown")
    rows = run_query(conn, Query(table="rows", filters={"run": deep.name, "case": "short"}))
    assert {(r["depth_tokens"], r["concurrency"], r["arrival_rate"]) for r in rows} == {(8192, 4, 1.5)}
    same = run_query(conn, Query(table="case-stats", filters={"workload": plain_stats["workload_key"]}))
    assert [s["workload_key"] for s in same] == [plain_stats["workload_key"]]
    runs = run_query(conn, Query(table="runs", filters={"system": plain_stats["system_key"]}))
    assert len(runs) == 2 and runs[0]["system_fields"]["kind"] == "system"


def test_a_lane_field_of_the_wrong_type_is_named(tmp_path, capsys):
    bad = _with_lanes(tmp_path, "2026-04-29-llama-server-smoke", concurrency="four")
    assert main(["registry", "import", "--db", str(tmp_path / "r.sqlite"), str(bad)]) == 2
    assert "concurrency" in capsys.readouterr().err
