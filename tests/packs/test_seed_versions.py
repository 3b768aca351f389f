"""The pack versions the seed implementation published (issue 18): each one is either bundled here as
the seed's own workload, backed by measured prompt-token counts, or `benchpack run ID@VERSION` says
in one line that the seed published it and its content is not bundled.

The token counts are a tokenizer fact no test can recompute (tests/data/seed-prompt-tokens.txt says how
they were measured); these tests hold what follows from them: the seed's rows report the recorded counts,
each verdict in benchpack/packs/seed_versions.txt is the one the counts give, and a bundled "same"
version still has the prompts that were measured and the shape of the seed's rows."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from benchpack import cli
from benchpack.packs import catalogue
from benchpack.packs.loader import load_pack
from benchpack.refserver.server import RefServer
from benchpack.results.resultdir import load_result_dir
from tests.data_paths import DATA, REAL_RESULTS

REPO = Path(__file__).resolve().parents[2]
TOKENS_FILE = DATA / "seed-prompt-tokens.txt"
SEED = catalogue.seed_versions()


def measured() -> dict[tuple[str, str], dict[str, dict]]:
    """(pack, version) -> case -> the recorded seed/ours counts, where ours came from, prompt sha256."""
    table: dict[tuple[str, str], dict[str, dict]] = defaultdict(dict)
    for line in TOKENS_FILE.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            pack_id, version, case, seed, ours, ours_from, digest = line.split()
            table[(pack_id, version)][case] = {"seed": int(seed), "ours": int(ours), "from": ours_from,
                                               "sha256": digest}
    return dict(table)


def seed_rows() -> dict[tuple[str, str], list[tuple[str, dict]]]:
    """(pack, version) -> [(result directory, row)] of every row in the seed's real results."""
    rows: dict[tuple[str, str], list[tuple[str, dict]]] = defaultdict(list)
    for path in sorted(REAL_RESULTS.glob("*/run.jsonl")):
        for line in path.read_text().splitlines():
            row = json.loads(line)
            rows[(row["pack"]["id"], row["pack"]["version"])].append((path.parent.name, row))
    return dict(rows)


def test_the_seed_list_ships_in_the_package_and_reads_as_three_verdicts():
    assert catalogue.SEED_VERSIONS_FILE.parent == REPO / "benchpack" / "packs"
    assert set(SEED.values()) <= set(catalogue.SEED_VERDICTS)
    assert ("patch-from-failure", "0.1.0") in SEED and ("runtime-sweep", "0.1.0") in SEED


def test_a_malformed_seed_list_line_names_its_file_and_line(tmp_path):
    bad = tmp_path / "seed_versions.txt"
    bad.write_text("# note\nsmoke-chat 0.1.0 same\nruntime-sweep 0.1.0 maybe\n")
    with pytest.raises(ValueError, match=r"seed_versions.txt:3: expected .* got 'runtime-sweep 0.1.0 maybe'"):
        catalogue.seed_versions(bad)


def test_every_seed_result_row_reports_the_recorded_prompt_tokens():
    table, rows = measured(), seed_rows()
    assert set(rows) <= set(SEED), "every pack version the seed's results name is in the seed list"
    assert set(table) == set(rows), "every seed version with result rows was measured"
    for key, entries in rows.items():
        assert {row["case"] for _, row in entries} == set(table[key]), key
        for directory, row in entries:
            assert row["tokens"]["prompt"] == table[key][row["case"]]["seed"], (directory, row["case"])


@pytest.mark.parametrize("key", sorted(measured()), ids=lambda k: f"{k[0]}@{k[1]}")
def test_the_verdict_is_the_one_the_token_counts_give(key):
    cases = measured()[key]
    same = all(c["seed"] == c["ours"] for c in cases.values())
    assert SEED[key] == ("same" if same else "differs"), {case: (c["seed"], c["ours"]) for case, c in cases.items()}


@pytest.mark.parametrize("key", [k for k, verdict in SEED.items() if verdict == "same"], ids=lambda k: f"{k[0]}@{k[1]}")
def test_a_same_version_is_bundled_with_the_measured_prompts_and_the_seed_rows_shape(key):
    entry = catalogue.find(*key)
    assert entry is not None, f"{key} is marked 'same' but is not bundled"
    pack = load_pack(entry.path)
    cases = measured()[key]
    assert [c.id for c in pack.cases] == list(cases)
    for case in pack.cases:
        assert cases[case.id]["from"] == "bundled"
        assert hashlib.sha256(case.prompt.encode()).hexdigest() == cases[case.id]["sha256"], (
            f"{case.id}: the prompt changed since its tokens were measured against the seed's")
    for directory, entries in _by_directory(seed_rows()[key]).items():
        per_case = Counter(row["case"] for row in entries)
        assert dict(per_case) == {c.id: pack.defaults.repetitions for c in pack.cases}, directory
        for row in entries:
            assert row["tokens"]["output"] <= pack.defaults.max_tokens, directory
            scoring = next(c.scoring for c in pack.cases if c.id == row["case"])
            assert (row["scoring"] or {}).get("mode") == (scoring.mode if scoring and scoring.mode != "none" else None)


def _by_directory(entries):
    grouped = defaultdict(list)
    for directory, row in entries:
        grouped[directory].append(row)
    return grouped


def test_the_same_version_runs_and_writes_the_seed_rows_cases_and_scoring(tmp_path):
    """smoke-chat 0.1.0, the seed's own version, run by `benchpack run ID@VERSION` end to end."""
    out = tmp_path / "out"
    with RefServer(responses=["The capital of France is Paris."], ttft_s=0.001, itl_s=0.0) as server:
        code = cli.main(["run", "smoke-chat@0.1.0", "--adapter", "openai-chat", "--model", "m",
                         "--endpoint", server.openai_url, "--out", str(out), "--host-label", "seed-check"])
    assert code == 0
    ours = [(r["pack"], r["case"], (r["scoring"] or {}).get("mode")) for r in load_result_dir(out).rows]
    theirs = [(r["pack"], r["case"], (r["scoring"] or {}).get("mode"))
              for directory, r in seed_rows()[("smoke-chat", "0.1.0")] if directory == "2026-04-29-llama-server-smoke"]
    assert ours == theirs


NOT_BUNDLED = sorted(key for key, verdict in SEED.items() if verdict != "same")


@pytest.mark.parametrize("key", NOT_BUNDLED, ids=lambda k: f"{k[0]}@{k[1]}")
def test_a_seed_version_that_differs_or_is_unknown_is_never_bundled(key):
    assert catalogue.find(*key) is None


@pytest.mark.parametrize("key", NOT_BUNDLED, ids=lambda k: f"{k[0]}@{k[1]}")
def test_running_a_seed_version_that_is_not_bundled_says_so_in_one_line(key, tmp_path):
    pack_id, version = key
    result = subprocess.run(
        [sys.executable, "-m", "benchpack", "run", f"{pack_id}@{version}", "--adapter", "openai-chat",
         "--model", "m", "--endpoint", "http://127.0.0.1:9", "--out", str(tmp_path / "out")],
        capture_output=True, text=True, cwd=tmp_path, timeout=60)
    bundled = ", ".join(catalogue.versions_of(pack_id))
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        f"{pack_id}@{version}: version {version} of pack {pack_id!r} was published by the seed implementation "
        f"of the Benchpack format; its content is not bundled (bundled versions: {bundled}; `benchpack list --all`)"]
    assert not (tmp_path / "out").exists()


def test_validate_answers_a_seed_version_the_same_way(capsys):
    assert cli.main(["validate", "patch-from-failure@0.1.0"]) == 2
    err = capsys.readouterr().err
    assert "patch-from-failure@0.1.0: version 0.1.0 of pack 'patch-from-failure' was published by the seed" in err
    assert f"(bundled versions: {', '.join(catalogue.versions_of('patch-from-failure'))};" in err


def test_a_version_nobody_published_keeps_the_plain_answer(capsys):
    assert cli.main(["validate", "patch-from-failure@0.2.0"]) == 2
    err = capsys.readouterr().err
    assert "no version 0.2.0 of bundled pack 'patch-from-failure'" in err and "seed" not in err
