"""Case stats taken a batch of runs at a time agree with one case at a time (issue 34)."""

import math
import shutil
import sqlite3

import pytest
from hypothesis import given, settings, strategies as st

from benchpack.errors import BenchpackError
from benchpack.registry import importer
from benchpack.registry.casebatch import STATS, CaseBatch
from benchpack.registry.casestate import combine, counted_state
from benchpack.registry.casestats import FIGURES, METRICS, CaseStatsBuilder
from benchpack.registry.importer import RunSource, import_result_dirs
from benchpack.registry.rows import COLUMNS, SQL_NULL
from benchpack.registry.schema import key_json_columns
from benchpack.results.cache_state import COLD, UNKNOWN
from tests.data_paths import REAL_RESULTS

REAL_DIRS = sorted(p for p in REAL_RESULTS.iterdir() if p.is_dir())

metric = st.one_of(st.none(), st.just(SQL_NULL), st.integers(-3, 10**6),
                   st.floats(-1e9, 1e9, allow_nan=False, allow_infinity=False))
row = st.fixed_dictionaries({
    "case": st.sampled_from("abcd"), "ok": st.integers(0, 1), "passed": st.sampled_from([None, SQL_NULL, 0, 1]),
    "metrics": st.tuples(*[metric] * len(METRICS)),
    "fallback": st.sampled_from([COLD, UNKNOWN]),  # the state a row's prompt-cache record would give
})


def columns(r: dict) -> tuple:
    values = [None] * len(COLUMNS)
    values[COLUMNS.index("ok")], values[COLUMNS.index("scoring_passed")] = r["ok"], r["passed"]
    for name, value in zip(METRICS, r["metrics"]):
        values[COLUMNS.index(name)] = value
    return tuple(values)


def same_median(got, want) -> bool:
    return math.isnan(got) if want is None else math.isclose(got, want, rel_tol=1e-12)


@settings(max_examples=300, deadline=None)
@given(st.lists(row, max_size=60), st.integers(0, 60), st.booleans())
def test_a_batch_gives_each_case_the_stats_and_cache_state_of_its_rows_alone(rows, cut, flush_between):
    """Rows of four cases in two chunks (optionally two flushes): every case's counts, medians and D-013
    state are those of its own rows, whatever the chunking and however uneven the cases."""
    batch, opened, results = CaseBatch(), {}, []
    chunks = [rows[:cut], rows[cut:]]

    def flush():
        infos, columns = batch.flush()
        results.extend(zip(infos, *(columns[name] for name in STATS)))

    for chunk in chunks:
        for r in chunk:
            if r["case"] not in opened:
                opened[r["case"]] = batch.open_group(r["case"])
        owners = [opened[r["case"]] for r in chunk]
        for index in batch.add_chunk(owners, [columns(r) for r in chunk]).tolist():
            batch.add_state(owners[index], chunk[index]["fallback"])
        if flush_between:
            flush()
            opened.clear()
    flush()
    assert batch.flush() == ([], {name: [] for name in STATS})
    expected = {}
    for r in rows:
        expected.setdefault(r["case"], []).append(r)
    if flush_between:  # a case seen in both chunks is two groups, one per flush
        expected = {}
        for chunk in chunks:
            seen = {}
            for r in chunk:
                seen.setdefault(r["case"], []).append(r)
            expected.update({(id(chunk), case): group for case, group in seen.items()})
    assert len(results) == len(expected)
    for (case, rows_, ok, scored, passed, prompt_rows, cached_rows, state, *medians), group in zip(
            results, expected.values()):
        assert case == group[0]["case"]
        builder = CaseStatsBuilder()
        for r in group:
            builder.add("key", r["ok"], r["passed"], r["metrics"])
        (stats,) = builder.build()
        assert (rows_, ok, scored, passed) == (stats.row_count, stats.ok_count, stats.scored_count, stats.passed_count)
        assert (prompt_rows, cached_rows) == (stats.prompt_token_rows, stats.cached_prompt_rows)
        assert all(same_median(got, stats.medians[name]) for got, name in zip(medians, FIGURES))
        prompt, cached = METRICS.index("prompt_tokens"), METRICS.index("cached_prompt_tokens")
        states = {counted_state(r["metrics"][prompt], r["metrics"][cached]) or r["fallback"] for r in group if r["ok"]}
        assert state == combine(states)


def table(path, sql: str) -> list:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def test_runs_flushed_one_batch_each_store_what_one_batch_for_all_stores(tmp_path, monkeypatch):
    one, each = tmp_path / "one.sqlite", tmp_path / "each.sqlite"
    import_result_dirs(one, [RunSource(d) for d in REAL_DIRS])
    monkeypatch.setattr(importer, "STATS_BATCH_ROWS", 1)
    import_result_dirs(each, [RunSource(d) for d in REAL_DIRS])
    names = [c[1] for c in table(one, "PRAGMA table_info(result_case_stats)") if not c[1].endswith("_json_id")]
    stored, joins = key_json_columns("s")  # the JSON by value: ids follow the order values were first met
    stats = (f"SELECT {', '.join(f's.{n}' for n in names)}, {', '.join(stored.values())}"
             f" FROM result_case_stats s{joins} ORDER BY s.rowid")
    for sql in (stats, "SELECT * FROM result_rows ORDER BY rowid",
                "SELECT id, result_dir, row_count, ok_count, packs, system_key, system_json, hardware_json"
                " FROM runs ORDER BY id"):
        assert table(each, sql) == table(one, sql)
    assert len(table(one, "SELECT DISTINCT run_id FROM result_case_stats")) == len(REAL_DIRS)


def test_runs_read_a_few_rows_a_chunk_store_what_whole_files_store(tmp_path, monkeypatch):
    """Chunks of 2 rows cut the sample runs' 3-row cases apart: a run's later chunks then hold known and
    new cases mixed (the importer's second numbering path), its first chunk only some of its cases."""
    whole, chunked = tmp_path / "whole.sqlite", tmp_path / "chunked.sqlite"
    import_result_dirs(whole, [RunSource(d) for d in REAL_DIRS])
    monkeypatch.setattr(importer, "CHUNK_ROWS", 2)
    import_result_dirs(chunked, [RunSource(d) for d in REAL_DIRS])
    stored, joins = key_json_columns("s")
    names = [c[1] for c in table(whole, "PRAGMA table_info(result_case_stats)") if not c[1].endswith("_json_id")]
    for sql in (f"SELECT {', '.join(f's.{n}' for n in names)}, {', '.join(stored.values())}"
                f" FROM result_case_stats s{joins} ORDER BY s.rowid",
                "SELECT * FROM result_rows ORDER BY rowid",
                "SELECT id, result_dir, row_count, ok_count, packs, system_key, system_json FROM runs ORDER BY id"):
        assert table(chunked, sql) == table(whole, sql)
    assert len(table(whole, "SELECT 1 FROM result_case_stats")) > len(REAL_DIRS)  # runs of several cases


@pytest.mark.parametrize("chunk_rows", [None, 2])
def test_a_new_registrys_waiting_run_rows_store_what_the_upsert_stores(tmp_path, monkeypatch, chunk_rows):
    """Into an empty runs table a run's row waits and is written with its counts and system key (or, when
    its rows were written mid-run, 2-row chunks here, updated after); into a registry that already has
    runs, each run is upserted and updated. Both store the same runs and rows."""
    if chunk_rows:
        monkeypatch.setattr(importer, "CHUNK_ROWS", chunk_rows)
    new, existing = tmp_path / "new.sqlite", tmp_path / "existing.sqlite"
    import_result_dirs(new, [RunSource(d) for d in REAL_DIRS])
    import_result_dirs(existing, [RunSource(REAL_DIRS[-1])])
    import_result_dirs(existing, [RunSource(d) for d in REAL_DIRS])  # the last one re-imported
    names = [c[1] for c in table(new, "PRAGMA table_info(runs)") if c[1] not in ("id", "imported_at")]
    runs = f"SELECT {', '.join(names)} FROM runs ORDER BY result_dir"
    rows = ("SELECT runs.result_dir, r.* FROM result_rows r JOIN runs ON runs.id = r.run_id"
            " ORDER BY runs.result_dir, r.line")
    assert table(new, runs) == table(existing, runs)
    assert [r[:1] + r[3:] for r in table(new, rows)] == [r[:1] + r[3:] for r in table(existing, rows)]  # but ids
    assert [r[0] for r in table(new, "SELECT row_count FROM runs")] == [
        len((d / "run.jsonl").read_text().splitlines()) for d in REAL_DIRS]
    assert table(new, "SELECT id FROM runs ORDER BY id") == [(i,) for i in range(1, len(REAL_DIRS) + 1)]


def test_directories_sharing_a_bad_run_file_each_report_it(tmp_path):
    copies = []
    for name in ("first", "second"):
        copy = shutil.copytree(REAL_DIRS[0], tmp_path / name)
        (copy / "hardware.json").write_text("[]")
        copies.append(copy)
    with pytest.raises(BenchpackError) as refused:
        import_result_dirs(tmp_path / "db.sqlite", [RunSource(c) for c in copies])
    assert [p.file for p in refused.value.problems] == [str(c.resolve() / "hardware.json") for c in copies]


def test_a_cases_stats_info_holds_no_object_of_its_rows(tmp_path, monkeypatch):
    """Two copies of one run (same machine, setup and cases): each case's info waiting for the flush is
    (run id, one tuple shared by the case in every run), not the case's first row text or key strings
    decoded from it, which would stay in the heap among the freed rows until the batch's flush."""
    copies = [shutil.copytree(REAL_DIRS[0], tmp_path / name) for name in ("first", "second")]
    infos = []
    open_group = CaseBatch.open_group
    monkeypatch.setattr(CaseBatch, "open_group", lambda batch, info: infos.append(info) or open_group(batch, info))
    import_result_dirs(tmp_path / "db.sqlite", [RunSource(c) for c in copies])
    first, second = infos[:len(infos) // 2], infos[len(infos) // 2:]
    assert len(first) == len(second) > 1
    assert {run_id for run_id, _ in first} == {1} and {run_id for run_id, _ in second} == {2}
    assert all(a[1] is b[1] for a, b in zip(first, second))
    texts = {line for c in copies for line in (c / "run.jsonl").read_text().splitlines()}
    assert not any(isinstance(value, str) and value in texts for _, shared in infos for value in shared)
