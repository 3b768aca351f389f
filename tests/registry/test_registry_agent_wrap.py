"""Curated one-shot wrap rows: idempotent by label, refused when a decision says they are not results."""

import copy
import json
import sqlite3
from pathlib import Path

import pytest

from benchpack.cli import main
from benchpack.registry.query import Query, run_query
from benchpack.registry.schema import open_read_only

SAMPLE = Path(__file__).resolve().parents[2] / "examples" / "agent-wrap-runs.sample.json"


def sample_runs() -> list[dict]:
    return json.loads(SAMPLE.read_text())["runs"]


def write(tmp_path, runs, name="curated.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(runs))
    return path


def test_it_imports_the_sample_and_queries_by_each_filter(tmp_path, capsys):
    db = tmp_path / "r.sqlite"
    assert main(["registry", "agent-wrap", "import", "--db", str(db), str(SAMPLE)]) == 0
    assert "4 new, 0 updated" in capsys.readouterr().out
    conn = open_read_only(db)
    labels = lambda **f: [r["label"] for r in run_query(conn, Query(table="agent-wrap", filters=f))]
    assert labels(status="fail") == ["qwen38-pi-llamacpp-256k-xhigh"]
    assert labels(harness="codex") == ["codex-hosted-high"]
    assert labels(provider="llamacpp", thinking="medium") == [
        "qwen38-pi-llamacpp-256k-medium", "qwen38-flashnext-pi-llamacpp-128k-medium"]
    assert labels(model="Qwen/Qwen3.8-27B") == ["qwen38-pi-llamacpp-256k-medium", "qwen38-pi-llamacpp-256k-xhigh"]
    record = run_query(conn, Query(table="agent-wrap", filters={"run": "qwen38-pi-llamacpp-256k-xhigh"}))[0]
    assert record["electron_precondition_ok"] is False and record["transcript_captured"] is True
    assert record["row"]["runner"].startswith("scripts/run-agent-wrap-oneshot")


def test_it_reimports_by_stable_label_without_duplicates(tmp_path, capsys):
    db = tmp_path / "r.sqlite"
    main(["registry", "agent-wrap", "import", "--db", str(db), str(SAMPLE)])
    runs = sample_runs()
    runs[1]["notes"] = "corrected note"
    assert main(["registry", "agent-wrap", "import", "--db", str(db), str(write(tmp_path, runs))]) == 0
    assert "0 new, 4 updated" in capsys.readouterr().out
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT count(*) FROM agent_wrap_runs").fetchone() == (4,)
    assert conn.execute("SELECT notes FROM agent_wrap_runs WHERE label = ?", (runs[1]["label"],)).fetchone() == (
        "corrected note",)


def test_it_queries_agent_wrap_rows_from_the_cli(tmp_path, capsys):
    db = tmp_path / "r.sqlite"
    main(["registry", "agent-wrap", "import", "--db", str(db), str(SAMPLE)])
    capsys.readouterr()
    assert main(["registry", "query", "--db", str(db), "--table", "agent-wrap", "--status", "pass",
                 "--harness", "pi"]) == 0
    assert len(json.loads(capsys.readouterr().out)) == 2
    assert main(["registry", "query", "--db", str(db), "--table", "agent-wrap", "--case", "x"]) == 2
    assert "--case: does not apply to --table agent-wrap" in capsys.readouterr().err


def _mutate(index, **changes):
    def apply(runs):
        for key, value in changes.items():
            if value is KeyError:
                runs[index].pop(key, None)
            else:
                runs[index][key] = value
        return runs
    return apply


@pytest.mark.parametrize("mutation, message", [
    (_mutate(0, label=KeyError), "runs[0].label: is required"),
    (_mutate(0, status="timeout"), "unknown status 'timeout'; must be pass or fail"),
    (_mutate(0, status="killed"), "externally terminated run is not a benchmark result"),
    (_mutate(2, externally_terminated=True), "(D-042)"),
    (_mutate(1, transcript_captured=False), "relaunch it with --pi-mode json (D-039)"),
    (_mutate(0, notes="slow run"), "notes must say the Electron install was broken on this host (D-040)"),
    (_mutate(0, thinking_level="high"), "'high' is not a Qwen3.8 reasoning_effort"),
    (_mutate(1, thinking_level=KeyError), "resolved reasoning_effort: off, low, medium or xhigh (D-041)"),
    (_mutate(1, reasoning_effort="low"), "disagrees with reasoning_effort 'low'"),
    (_mutate(3, date="yesterday"), "date: must be an ISO date"),
    (_mutate(3, label="qwen38-pi-llamacpp-256k-medium"), "duplicate label"),
])
def test_it_refuses_rows_the_wrap_decisions_rule_out(tmp_path, capsys, mutation, message):
    db = tmp_path / "r.sqlite"
    curated = write(tmp_path, mutation(copy.deepcopy(sample_runs())))
    assert main(["registry", "agent-wrap", "import", "--db", str(db), str(curated)]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not db.exists()  # nothing is written for a refused file


def test_it_accepts_a_hosted_cell_without_a_transcript(tmp_path):
    runs = sample_runs()
    runs[3]["transcript_captured"] = False  # D-039 binds local-model pi cells only
    assert main(["registry", "agent-wrap", "import", "--db", str(tmp_path / "r.sqlite"), str(write(tmp_path, runs))]) == 0


def test_it_refuses_a_file_that_is_not_a_list_of_runs(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text('{"rows": []}')
    assert main(["registry", "agent-wrap", "import", "--db", str(tmp_path / "r.sqlite"), str(bad)]) == 2
    assert "must be a JSON array of runs" in capsys.readouterr().err
