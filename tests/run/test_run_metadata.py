import json
from pathlib import Path

import pytest

from benchpack.errors import ConfigError
from benchpack.results.run_metadata import summary_lines
from benchpack.run.metadata import load_run_metadata, write_run_metadata
from tests.data_paths import REAL_RESULTS

REAL_SUMMARY = REAL_RESULTS / "2026-04-29-llama-server-runtime" / "summary.md"


def metadata_file(tmp_path, content):
    path = tmp_path / "meta.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return path


@pytest.mark.parametrize(
    "content, field",
    [
        ("[1, 2]", ""),
        ({"runtime": "llama-server"}, "runtime"),
        ({"model": ["q4"]}, "model"),
        ({"operating_conditions": 3}, "operating_conditions"),
        ({"notes": 42}, "notes"),
        ("{not json", "line 1"),
    ],
)
def test_it_names_the_file_and_field_of_invalid_metadata(tmp_path, content, field):
    path = metadata_file(tmp_path, content)
    with pytest.raises(ConfigError) as info:
        load_run_metadata(path)
    [problem] = info.value.problems
    assert (problem.file, problem.field) == (str(path), field)


def test_it_reports_a_missing_file(tmp_path):
    with pytest.raises(ConfigError) as info:
        load_run_metadata(tmp_path / "absent.json")
    assert "no such file" in str(info.value)


def test_it_keeps_unknown_keys_and_round_trips(tmp_path):
    data = {"runtime": {"name": "ollama"}, "notes": "", "campaign": "q3", "model": {}}
    loaded = load_run_metadata(metadata_file(tmp_path, data))
    assert loaded == data
    write_run_metadata(tmp_path, loaded)
    assert json.loads((tmp_path / "run-metadata.json").read_text()) == data


def test_it_renders_the_historical_summary_lines():
    """The run-metadata lines of a hand-written summary are reproduced from the documented keys."""
    expected = [line for line in REAL_SUMMARY.read_text().splitlines()
                if line.split(":")[0] in ("Runtime", "Server command", "Endpoint", "Model file",
                                          "Model SHA256", "Quantization", "Context")]
    command = expected[1].split("`")[1]
    metadata = {
        "runtime": {"name": "llama-server", "provenance": "from Homebrew `llama.cpp`",
                    "version": "version: 8960 (19821178b)", "server_command": command,
                    "endpoint": "http://127.0.0.1:8081/v1", "context": 4096},
        "model": {"file": "/Users/jochen/models/gguf/Qwen2.5-0.5B-Instruct-Q4_K_M.gguf",
                  "sha256": "6eb923e7d26e9cea28811e1a8e852009b21242fb157b26149d3b188f3a8c8653",
                  "quantization": "Q4_K_M",
                  "quantization_detail": "`llama-server` reported file type `Q4_K - Medium`"},
    }
    assert summary_lines(metadata) == expected


def test_it_lists_every_other_supplied_value():
    lines = summary_lines({
        "runtime": {"name": "mlx_lm.server", "version": ["mlx-lm==0.31.3", "mlx==0.31.2"], "flash_attn": True},
        "operating_conditions": {"power": "AC", "thermal": "cool"},
        "campaign": "q3",
        "notes": "lid closed",
    })
    assert lines == [
        "Runtime: `mlx_lm.server` (`mlx-lm==0.31.3`, `mlx==0.31.2`)",
        "Runtime details: flash_attn=True",
        "Operating conditions: power=AC; thermal=cool",
        "Other metadata: campaign=q3",
        "Notes: lid closed",
    ]


def test_it_renders_nothing_without_metadata():
    assert summary_lines(None) == [] and summary_lines({}) == []
