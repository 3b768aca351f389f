"""`registry bundle import`: validate first, then index with the manifest's labels."""

import sqlite3
from pathlib import Path

import pytest

from benchpack.cli import main
from tests.data_paths import REAL_RESULTS

RUNS = [REAL_RESULTS / "2026-04-29-llama-server-smoke", REAL_RESULTS / "2026-04-28-mlx-lm-runtime"]


@pytest.fixture
def bundle(tmp_path):
    out = tmp_path / "bundle"
    assert main(["registry", "bundle", "create", "--out", str(out), "--provenance", "operator-curated",
                 *map(str, RUNS)]) == 0
    return out


def test_it_indexes_a_valid_bundle_under_its_manifest_labels(tmp_path, bundle, capsys):
    db = tmp_path / "r.sqlite"
    assert main(["registry", "bundle", "import", "--db", str(db), str(bundle)]) == 0
    conn = sqlite3.connect(db)
    runs = conn.execute("SELECT label, source, result_dir, row_count FROM runs ORDER BY id").fetchall()
    assert [(r[0], r[1], r[3]) for r in runs] == [
        ("2026-04-29-llama-server-smoke", "bundle (operator-curated)", 1),
        ("2026-04-28-mlx-lm-runtime", "bundle (operator-curated)", 9),
    ]
    assert all(r[2].startswith(str(bundle.resolve())) for r in runs)
    # Importing again replaces rather than duplicates.
    assert main(["registry", "bundle", "import", "--db", str(db), str(bundle)]) == 0
    assert conn.execute("SELECT count(*) FROM result_rows").fetchone() == (10,)


def test_it_refuses_an_invalid_bundle_by_finding_code_and_writes_nothing(tmp_path, bundle, capsys):
    run_file = bundle / "runs" / "2026-04-28-mlx-lm-runtime" / "run.jsonl"
    run_file.write_text(run_file.read_text().replace("\"short\"", "\"sharp\""))  # same size: only the hash can tell
    db = tmp_path / "r.sqlite"
    capsys.readouterr()
    assert main(["registry", "bundle", "import", "--db", str(db), str(bundle)]) == 2
    err = capsys.readouterr().err
    assert "run.jsonl" in err and "mismatch" in err  # the finding code names the check
    assert not db.exists()


def test_it_refuses_a_directory_that_is_not_a_bundle(tmp_path, capsys):
    assert main(["registry", "bundle", "import", "--db", str(tmp_path / "r.sqlite"), str(RUNS[0])]) == 2
    assert "Traceback" not in capsys.readouterr().err
