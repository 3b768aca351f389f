from pathlib import Path

import pytest

from benchpack.errors import BenchpackError
from benchpack.results.resultdir import field, load_result_dir, read_rows
from tests.data_paths import REAL_RESULTS



def test_it_reads_every_real_result_directory():
    dirs = sorted(p for p in REAL_RESULTS.iterdir() if p.is_dir())
    assert len(dirs) == 5
    for d in dirs:
        result = load_result_dir(d)
        assert result.rows, d
        assert result.hardware["hostname"] == "atlas.local"
        assert all(field(r, "pack.id") for r in result.rows)


def test_it_treats_missing_fields_as_null():
    result = load_result_dir(REAL_RESULTS / "2026-04-29-llama-server-runtime")
    assert field(result.rows[0], "tokens.cached_prompt") is None
    assert field(result.rows[0], "tokens.prompt") == 104


def test_it_names_the_line_of_a_bad_row(tmp_path):
    (tmp_path / "run.jsonl").write_text('{"ok": true}\nnot json\n[1]\n')
    with pytest.raises(BenchpackError) as info:
        read_rows(tmp_path / "run.jsonl")
    assert [p.field for p in info.value.problems] == ["line 2", "line 3"]
