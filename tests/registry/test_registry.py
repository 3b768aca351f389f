"""Registry import / query / report / site over the real result directories."""

import hashlib
import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from benchpack.cli import main
from benchpack.errors import BenchpackError
from benchpack.registry.importer import RunSource, import_into, import_result_dirs
from benchpack.registry.query import Query, explain_plan, run_query
from benchpack.registry.schema import SCHEMA_VERSION, open_read_only
from tests.data_paths import REAL_RESULTS

REAL_DIRS = sorted(p for p in REAL_RESULTS.iterdir() if p.is_dir())


def run_cli(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def db(tmp_path):
    path = tmp_path / "registry.sqlite"
    import_result_dirs(path, [RunSource(d) for d in REAL_DIRS])
    return path


def counts(path: Path) -> dict:
    conn = sqlite3.connect(path)
    try:
        return {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
                for t in ("runs", "result_rows", "result_case_stats")}
    finally:
        conn.close()


def test_it_indexes_every_real_row_with_normalized_columns(db):
    expected_rows = sum(len(d.joinpath("run.jsonl").read_text().splitlines()) for d in REAL_DIRS)
    assert counts(db)["runs"] == 5
    assert counts(db)["result_rows"] == expected_rows
    conn = open_read_only(db)
    row = run_query(conn, Query(filters={"run": "2026-04-30-llama-server-desktop-django-wrap",
                                         "case": "wrap-plan-small"}))[0]
    assert row["pack_id"] == "desktop-django-wrap" and row["pack_version"] == "0.1.5"
    assert row["cached_prompt_tokens"] == 0 and row["prompt_tokens"] == 569
    assert row["scoring_mode"] == "regex" and row["scoring_passed"] is False
    assert row["ttfb_s"] is None  # older rows lack it: null, not an error


def test_it_records_the_schema_version(db):
    conn = open_read_only(db)
    assert conn.execute("SELECT value FROM registry_meta WHERE key='schema_version'").fetchone() == (str(SCHEMA_VERSION),)


def test_it_computes_case_medians_and_prompt_cache_coverage(db):
    conn = open_read_only(db)
    stats = run_query(conn, Query(table="case-stats", filters={"run": "2026-04-29-llama-server-runtime",
                                                                "case": "short"}))
    assert len(stats) == 1
    rows = [json.loads(line) for line in
            (REAL_RESULTS / "2026-04-29-llama-server-runtime" / "run.jsonl").read_text().splitlines()
            if json.loads(line)["case"] == "short"]
    walls = sorted(r["timing"]["wall_s"] for r in rows)
    assert stats[0]["median_wall_s"] == walls[1]
    assert stats[0]["median_prompt_tokens"] == 104 and stats[0]["prompt_token_rows"] == 3
    assert stats[0]["median_cached_prompt_tokens"] is None and stats[0]["cached_prompt_rows"] == 0


def test_it_reimports_idempotently_keyed_by_the_resolved_directory(db, tmp_path, monkeypatch):
    conn = sqlite3.connect(db)
    before = conn.execute("SELECT id, result_dir FROM runs ORDER BY id").fetchall()
    rows_before = conn.execute("SELECT run_id, line, raw_json FROM result_rows ORDER BY run_id, line").fetchall()
    conn.close()
    # Same directory through a different spelling of its path.
    monkeypatch.chdir(REAL_RESULTS)
    summaries = import_result_dirs(db, [RunSource(Path("..") / "real-results" / d.name) for d in REAL_DIRS])
    assert all(s.replaced for s in summaries)
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT id, result_dir FROM runs ORDER BY id").fetchall() == before
    assert conn.execute("SELECT run_id, line, raw_json FROM result_rows ORDER BY run_id, line").fetchall() == rows_before


def test_it_replaces_child_rows_when_a_run_changes(db, tmp_path):
    copy = tmp_path / "run-copy"
    shutil.copytree(REAL_RESULTS / "2026-04-28-mlx-lm-runtime", copy)
    import_result_dirs(db, [RunSource(copy)])
    lines = (copy / "run.jsonl").read_text().splitlines()
    (copy / "run.jsonl").write_text("\n".join(lines[:4]) + "\n")
    import_result_dirs(db, [RunSource(copy)])
    conn = open_read_only(db)
    assert len(run_query(conn, Query(filters={"run": "run-copy"}))) == 4
    stats = run_query(conn, Query(table="case-stats", filters={"run": "run-copy"}))
    assert sorted((s["case_id"], s["row_count"]) for s in stats) == [("medium", 1), ("short", 3)]


def test_it_filters_exactly_and_rejects_filters_a_table_lacks(db):
    conn = open_read_only(db)
    rows = run_query(conn, Query(filters={"pack": "runtime-sweep", "model": "qwen2.5-0.5b-instruct-q4_k_m"}))
    assert len(rows) == 9 and {r["run"] for r in rows} == {"2026-04-29-llama-server-runtime"}
    assert run_query(conn, Query(filters={"model": "qwen2.5"})) == []  # exact, not substring
    assert len(run_query(conn, Query(filters={"ok": 1}))) == 22
    runs = run_query(conn, Query(table="runs", filters={"case": "capital"}))
    assert [r["label"] for r in runs] == ["2026-04-28-mlx-lm-smoke", "2026-04-29-llama-server-smoke"]
    assert len(run_query(conn, Query(filters={"pack": "runtime-sweep"}, limit=5))) == 5
    with pytest.raises(BenchpackError, match="--ok: does not apply to --table case-stats"):
        run_query(conn, Query(table="case-stats", filters={"ok": 1}))


def test_it_filters_rows_by_fingerprint(db):
    conn = open_read_only(db)
    stat = run_query(conn, Query(table="case-stats", filters={"run": "2026-04-29-llama-server-runtime", "case": "long"}))[0]
    rows = run_query(conn, Query(filters={"fingerprint": stat["fingerprint"]}))
    assert len(rows) == 3 and {r["case_id"] for r in rows} == {"long"}
    assert stat["fingerprint_fields"]["unknown"] == ["model_quantization", "runtime_name", "runtime_version"]


def test_it_plans_exact_filters_through_indexes(db):
    conn = open_read_only(db)
    for filters in ({"pack": "p", "pack_version": "1", "case": "c"}, {"model": "m"}, {"fingerprint": "f"},
                    {"adapter": "a"}):
        plan = " ".join(explain_plan(conn, Query(filters=filters)))
        assert "USING INDEX" in plan or "USING COVERING INDEX" in plan, (filters, plan)
    failed = " ".join(explain_plan(conn, Query(filters={"adapter": "a", "ok": 0})))
    assert "result_rows_failed" in failed
    assert run_query(conn, Query(filters={"ok": 0})) == []  # the real results have no failed rows


def test_it_never_changes_the_database_when_reading(db, tmp_path, capsys):
    before = digest(db)
    assert run_cli(capsys, "registry", "query", "--db", db, "--table", "case-stats")[0] == 0
    assert run_cli(capsys, "registry", "report", "--db", db)[0] == 0
    assert run_cli(capsys, "registry", "site", "--db", db, "--out", tmp_path / "site")[0] == 0
    assert digest(db) == before
    assert sorted(p.name for p in db.parent.iterdir() if p.name.startswith("registry")) == ["registry.sqlite"]


def test_it_refuses_to_write_through_a_read_only_connection(db):
    conn = open_read_only(db)
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        conn.execute("DELETE FROM runs")


def test_it_reports_from_the_database_alone(db, tmp_path, capsys):
    moved = tmp_path / "moved.sqlite"
    shutil.copy(db, moved)
    code, out, _ = run_cli(capsys, "registry", "report", "--db", moved, "--run", "2026-04-30-llama-server-desktop-django-wrap")
    assert code == 0
    assert "desktop-django-wrap 0.1.5" in out and "wrap-plan-context" in out
    assert "# Pack: desktop-django-wrap" in out
    assert "Apple M5 Max" in out  # hardware.json came from the database


def test_it_writes_an_escaped_static_site(tmp_path, capsys):
    run = tmp_path / "<script>alert(1)</script>"
    shutil.copytree(REAL_RESULTS / "2026-04-29-llama-server-smoke", run)
    db = tmp_path / "r.sqlite"
    import_result_dirs(db, [RunSource(run)])
    code, _, _ = run_cli(capsys, "registry", "site", "--db", db, "--out", tmp_path / "site")
    assert code == 0
    index = (tmp_path / "site" / "index.html").read_text()
    assert "<script>" not in index and "&lt;script&gt;alert(1)&lt;/script&gt;" in index
    assert "capital" in index and "apple-m5-max-64gb" in index
    assert (tmp_path / "site" / "report.md").read_text().startswith("# Benchpack report")


def test_it_prints_json_arrays_from_the_query_command(db, capsys):
    code, out, _ = run_cli(capsys, "registry", "query", "--db", db, "--table", "rows", "--case", "capital", "--ok", "true")
    assert code == 0
    records = json.loads(out)
    assert [r["run"] for r in records] == ["2026-04-28-mlx-lm-smoke", "2026-04-29-llama-server-smoke"]
    assert {r["cache_state"] for r in records} == {"unknown"}  # these older rows never reported cached counts
    code, out, _ = run_cli(capsys, "registry", "query", "--db", db, "--pack", "desktop-django-wrap")
    assert {r["cache_state"] for r in json.loads(out)} == {"cold"}  # 0 of 569 prompt tokens from cache


@pytest.mark.parametrize("content, expected", [
    ('{"pack": {"id": "p", "version": "1"}, "case": "c", "adapter": "a", "model": "m", "ok": "yes"}\n',
     "run.jsonl: line 1: ok: must be true or false"),
    ("not json\n", "run.jsonl: line 1: not valid JSON"),
    ('{"pack": "p", "case": "c", "adapter": "a", "model": "m", "ok": true, "timing": {"wall_s": "1"}}\n',
     "line 1: timing.wall_s: must be a number or null"),
    ("", "run.jsonl: has no result rows"),
])
def test_it_refuses_bad_rows_with_exit_2_and_writes_nothing(tmp_path, capsys, content, expected):
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "run.jsonl").write_text(content)
    db = tmp_path / "r.sqlite"
    code, _, err = run_cli(capsys, "registry", "import", "--db", db, REAL_DIRS[0], bad)
    assert code == 2
    assert expected in err and "Traceback" not in err
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT count(*) FROM runs").fetchone() == (0,)  # the good dir rolled back too


def test_it_refuses_bad_metadata_and_missing_directories(tmp_path, capsys):
    run = tmp_path / "run"
    shutil.copytree(REAL_DIRS[0], run)
    (run / "run-metadata.json").write_text('{"runtime": "llama.cpp"}')
    code, _, err = run_cli(capsys, "registry", "import", "--db", tmp_path / "r.sqlite", run, tmp_path / "nope")
    assert code == 2
    assert "run-metadata.json: runtime: must be a JSON object" in err
    assert "nope: not a result directory" in err


def test_it_refuses_a_non_registry_database(tmp_path, capsys):
    other = tmp_path / "other.sqlite"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE t (x)")
    conn.commit()
    conn.close()
    code, _, err = run_cli(capsys, "registry", "import", "--db", other, REAL_DIRS[0])
    assert code == 2 and "not a benchpack registry" in err
    code, _, err = run_cli(capsys, "registry", "query", "--db", tmp_path / "missing.sqlite")
    assert code == 2 and "no such registry database" in err


def _as_floats(values):
    return tuple(float(v) if isinstance(v, int) and not isinstance(v, bool) else v for v in values)


def test_it_decodes_rows_the_same_on_the_fast_and_the_exact_path():
    from benchpack.registry.rows import decode_row, normalize_row

    texts = [line for d in REAL_DIRS for line in (d / "run.jsonl").read_text().splitlines() if line.strip()]
    repo_row = {"pack": {"id": "p", "version": "1"}, "case": "c", "adapter": "a", "model": "m", "ok": False,
                "error": "boom", "scoring": {"mode": "verify-script", "passed": False},
                "repo_task": {"status": "failed", "verify_exit_code": 3}, "repetition": 2}
    texts.append(json.dumps(repo_row))
    for text in texts:
        assert _as_floats(decode_row(text)) == _as_floats(normalize_row(json.loads(text)))


def test_the_fast_path_is_the_row_contract_cut_to_the_registry_columns():
    """Issue 28: no second row definition — the fast path's types are the contract's own."""
    import msgspec

    from benchpack.registry import rows
    from benchpack.results import contract

    for projection, source in ((rows._Row, contract.Row), (rows._Timing, contract.Timing),
                               (rows._Tokens, contract.Tokens), (rows._RepoTask, contract.RepoTask)):
        theirs = {f.name: f.type for f in msgspec.structs.fields(source)}
        for field in msgspec.structs.fields(projection):
            if not field.name.startswith(("timing", "tokens", "scoring", "repo_task")):
                assert field.type == theirs[field.name], (projection, field.name)


@pytest.mark.parametrize("change", [{"model": ""}, {"endpoint": ""}, {"tokens": {"source": ""}},
                                    {"scoring": {"mode": ""}}, {"case": ""}, {"timing": {"wall_s": "fast"}}])
def test_both_paths_refuse_an_empty_key_the_registry_keeps(change):
    from benchpack.registry.rows import BadRow, FastPathMiss, decode_row, normalize_row

    row = {"pack": {"id": "p", "version": "1"}, "case": "c", "adapter": "a", "model": "m", "ok": True, **change}
    with pytest.raises(FastPathMiss):
        decode_row(json.dumps(row))
    with pytest.raises(BadRow):
        normalize_row(row)


def test_it_accepts_integral_float_token_counts_that_the_fast_path_refuses(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    row = {"pack": {"id": "p", "version": "1"}, "case": "c", "adapter": "a", "model": "m", "ok": True,
           "tokens": {"prompt": 12.0, "output": 3}}
    (run / "run.jsonl").write_text(json.dumps(row) + "\n")
    db = tmp_path / "r.sqlite"
    import_result_dirs(db, [RunSource(run)])
    assert run_query(open_read_only(db), Query())[0]["prompt_tokens"] == 12


def test_it_stores_absent_fields_as_null_and_leaves_them_out_of_medians(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    bare = {"pack": {"id": "p", "version": "1"}, "case": "c", "adapter": "a", "model": "m", "ok": True}
    full = {**bare, "timing": {"wall_s": 2.0}, "tokens": {"prompt": 7}, "scoring": {"mode": "contains", "passed": True}}
    (run / "run.jsonl").write_text(json.dumps(bare) + "\n" + json.dumps(full) + "\n")
    db = tmp_path / "r.sqlite"
    import_result_dirs(db, [RunSource(run)])
    conn = open_read_only(db)
    first = run_query(conn, Query())[0]
    assert all(first[c] is None for c in ("endpoint", "error", "wall_s", "tpot_s", "prompt_tokens", "token_source",
                                          "scoring_mode", "scoring_passed", "repo_task_status", "repetition"))
    assert conn.execute("SELECT count(*) FROM result_rows WHERE wall_s IS NULL AND error IS NULL").fetchone() == (1,)
    stats = run_query(conn, Query(table="case-stats"))[0]
    assert (stats["row_count"], stats["scored_count"], stats["passed_count"]) == (2, 1, 1)
    assert stats["median_wall_s"] == 2.0 and stats["median_prompt_tokens"] == 7 and stats["prompt_token_rows"] == 1


def _row_indexes(path: Path) -> list:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'index'"
                            " AND tbl_name IN ('result_rows', 'result_case_stats') ORDER BY name").fetchall()
    finally:
        conn.close()


def test_it_keeps_every_row_index_through_bulk_refused_and_repeated_imports(tmp_path):
    from benchpack.registry.schema import open_for_write

    db = tmp_path / "r.sqlite"
    open_for_write(db).close()
    created = _row_indexes(db)
    assert len(created) >= 9
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "run.jsonl").write_text("not json\n")
    with pytest.raises(BenchpackError):
        import_result_dirs(db, [RunSource(REAL_DIRS[0]), RunSource(bad)])  # into the empty table, rolled back
    assert _row_indexes(db) == created
    import_result_dirs(db, [RunSource(d) for d in REAL_DIRS[:2]])  # bulk path: indexes rebuilt after the load
    assert _row_indexes(db) == created
    import_result_dirs(db, [RunSource(d) for d in REAL_DIRS])  # non-empty table: maintained row by row
    assert _row_indexes(db) == created
    assert counts(db)["result_rows"] == sum(len((d / "run.jsonl").read_text().splitlines()) for d in REAL_DIRS)


def test_it_deletes_child_rows_only_for_runs_it_already_had(tmp_path):
    # A DELETE per new run scanned the whole (index-less, mid bulk load)
    # table once per directory: quadratic in a many-directory import.
    from benchpack.registry.schema import open_for_write

    db = tmp_path / "r.sqlite"
    statements: list[str] = []
    conn = open_for_write(db)
    conn.set_trace_callback(statements.append)
    try:
        import_into(conn, [RunSource(d) for d in REAL_DIRS[:2]])
        assert not [s for s in statements if s.lstrip().upper().startswith("DELETE")]
        before = counts(db)
        import_into(conn, [RunSource(REAL_DIRS[0])])  # re-import: its child rows are replaced, not added
        assert [s for s in statements if s.lstrip().upper().startswith("DELETE")]
    finally:
        conn.close()
    assert counts(db) == before


def test_its_report_has_one_section_per_pack_not_a_cross_product(db, capsys):
    code, out, _ = run_cli(capsys, "registry", "report", "--db", db)
    assert code == 0
    sections = [line for line in out.splitlines() if line.startswith("# Pack: ")]
    assert sections == ["# Pack: runtime-sweep", "# Pack: smoke-chat", "# Pack: desktop-django-wrap"]
    # Every run appears only under the pack it ran: no case is "missing" from a run.
    assert "prefill parity: missing-case" not in out and "| 0/0 |" not in out
    runtime = out[out.index("# Pack: runtime-sweep"):out.index("# Pack: smoke-chat")]
    assert "2026-04-28-mlx-lm-runtime" in runtime and "smoke" not in runtime
    code, out, _ = run_cli(capsys, "registry", "report", "--db", db, "--pack", "smoke-chat", "--json")
    assert [p["pack"] for p in json.loads(out)["packs"]] == ["smoke-chat"]


def test_the_canonical_path_of_a_result_directory_is_its_resolved_path(tmp_path, monkeypatch):
    """The importer resolves a directory's parent once per import; every spelling still gives resolve()."""
    from benchpack.registry.importer import canonical_path

    real = tmp_path / "real"
    (real / "run").mkdir(parents=True)
    (tmp_path / "parent-link").symlink_to(real)
    (real / "run-link").symlink_to(real / "run")
    monkeypatch.chdir(real)
    parents: dict = {}
    for spelling in (real / "run", tmp_path / "parent-link" / "run", real / "run-link", Path("run"),
                     Path("run") / ".." / "run", Path("."), Path(".."), real / "missing", Path("run-link")):
        assert canonical_path(spelling, parents) == spelling.resolve(), spelling
