"""The local registry (schema 4) keeps each case's workload and system keys and the lane columns."""

import json
import shutil

from benchpack.cli import main
from benchpack.registry.importer import RunSource, import_result_dirs
from benchpack.registry.query import Query, run_query
from benchpack.registry.schema import open_read_only
from pathlib import Path

from tests.data_paths import LANES_RESULTS, REAL_RESULTS


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


def _rows_of(path):
    return [line for line in (path / "run.jsonl").read_text().splitlines() if line.strip()]


def test_workload_bits_read_what_a_full_decode_of_the_row_reads():
    """The substring shortcut (no workload field named) gives the decode's answer on every sample row and on
    rows that name a field only through an escape, or name it only inside a string."""
    from benchpack.registry.importer import _WORKLOAD_BITS, workload_bits
    import msgspec

    base = json.loads(_rows_of(REAL_RESULTS / "2026-04-29-llama-server-runtime")[0])
    crafted = [
        json.dumps({**base, "request": {"temperature": 0.5}}),
        json.dumps({**base, "request": {"temperature": 0.5}}).replace('"request"', '"\\u0072equest"'),
        json.dumps({**base, "lane": {"concurrency": 4}}).replace('"lane"', '"l\\u0061ne"'),
        json.dumps({**base, "depth_tokens": 1024}).replace('"depth_tokens"', '"depth_tokens"  '),
        json.dumps({**base, "note": "request"}),  # the quoted word inside a string: decoded, nothing found
        json.dumps({**base, "case": "caf\u00e9"}),  # an escape that names no field
        json.dumps({**base, "arrival_rate": 2}).replace('"arrival_rate": 2', '"arrival_rate":2.0'),
    ]
    samples = [line for d in [*REAL_RESULTS.iterdir(), *LANES_RESULTS.iterdir()] if d.is_dir()
               for line in _rows_of(d)]
    for text in samples + crafted:
        assert workload_bits(text) == tuple(map(bytes, msgspec.structs.astuple(_WORKLOAD_BITS(text)))), text
    assert workload_bits(crafted[1])[0] == b'{"temperature": 0.5}'  # the escaped key is still read
    assert workload_bits(crafted[6])[4] == b"2.0"


def test_each_stored_workload_key_is_the_one_of_its_cases_first_row(tmp_path):
    """A mixed corpus — sample runs, lane runs, copies whose first rows carry request settings (one through an
    escaped key) — imported in one go (workload keys cached across runs): every stats row holds the key
    `fingerprint.workload_key` gives for its case's first row in its own run."""
    from benchpack.packs.case_content import case_spec
    from benchpack.registry import fingerprint as fp

    plain = REAL_RESULTS / "2026-04-29-llama-server-runtime"
    dirs = sorted(d for d in [*REAL_RESULTS.iterdir(), *LANES_RESULTS.iterdir()] if d.is_dir())
    for name, replace in (("hot", '"request"'), ("escaped", '"\\u0072equest"')):
        target = shutil.copytree(plain, tmp_path / f"{name}-request")
        rows = [json.loads(line) for line in _rows_of(target)]
        text = "".join(json.dumps({**r, "request": {"temperature": 0.9}}).replace('"request"', replace) + "\n"
                       for r in rows)
        (target / "run.jsonl").write_text(text)
        dirs.append(target)
    db = tmp_path / "r.sqlite"
    import_result_dirs(db, [RunSource(d) for d in dirs])
    conn = open_read_only(db)
    stats = conn.execute("SELECT r.result_dir, s.pack_id, s.pack_version, s.case_id, s.adapter, s.model,"
                         " s.cache_state, s.workload_key FROM result_case_stats s JOIN runs r ON r.id = s.run_id"
                         ).fetchall()
    assert len({s[0] for s in stats}) == len(dirs)
    for result_dir, pack_id, version, case_id, adapter, model, state, stored in stats:
        first = next(r for r in map(json.loads, _rows_of(Path(result_dir)))
                     if (r["pack"]["id"], r["pack"]["version"], r["case"], r["adapter"], r["model"])
                     == (pack_id, version, case_id, adapter, model))
        want = fp.workload_key([first], case_spec(pack_id, version, case_id), cache_state=state)
        assert stored == want.digest, (result_dir, case_id)
    hot = {s[7] for s in stats if s[0].endswith("-request") and s[3] == "short"}
    cold = {s[7] for s in stats if s[0] == str(plain.resolve()) and s[3] == "short"}
    assert len(hot) == 1 and hot.isdisjoint(cold)  # the settings change the key, however the key is spelled


def test_a_run_of_several_models_and_packs_keeps_their_cases_apart(tmp_path):
    """A run's first chunk groups rows by case id alone only when pack, version, adapter and model are
    one; rows of one case id under two models, adapters or pack versions, interleaved, stay separate."""
    source = REAL_RESULTS / sorted(p.name for p in REAL_RESULTS.iterdir() if p.is_dir())[0]
    run = tmp_path / "mixed"
    shutil.copytree(source, run, ignore=shutil.ignore_patterns("raw"))
    rows = [json.loads(line) for line in (source / "run.jsonl").read_text().splitlines() if line.strip()]
    mixed = []
    for row in rows:  # each row, then its copies under another model, adapter and pack version
        mixed.append(row)
        mixed.append({**row, "model": row["model"] + "-other"})
        mixed.append({**row, "adapter": "ollama-generate" if row["adapter"] != "ollama-generate" else "openai-chat"})
        mixed.append({**row, "pack": {**row["pack"], "version": row["pack"]["version"] + "-b"}})
    (run / "run.jsonl").write_text("".join(json.dumps(r) + "\n" for r in mixed))
    db = tmp_path / "r.sqlite"
    import_result_dirs(db, [RunSource(run)])
    conn = open_read_only(db)
    stats = {r[:5]: r[5:] for r in conn.execute(
        "SELECT pack_id, pack_version, case_id, adapter, model, row_count, ok_count, median_wall_s"
        " FROM result_case_stats")}
    expected = {}
    for r in mixed:
        expected.setdefault((r["pack"]["id"], r["pack"]["version"], r["case"], r["adapter"], r["model"]), []).append(r)
    assert len(stats) == len(expected) == 4 * len({(r["pack"]["id"], r["case"]) for r in rows})
    for key, group in expected.items():
        walls = sorted(r["timing"]["wall_s"] for r in group if r["ok"] and r["timing"]["wall_s"] is not None)
        middle = (walls[(len(walls) - 1) // 2] + walls[len(walls) // 2]) / 2 if walls else None
        assert stats[key] == (len(group), sum(1 for r in group if r["ok"]), middle), key
