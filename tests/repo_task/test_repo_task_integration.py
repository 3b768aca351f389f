"""Whole runs: runner + real openai-chat adapter + reference endpoint + repo-task executor."""

import json
import sys
from pathlib import Path

import pytest

from benchpack.errors import ConfigError
from benchpack.refserver.server import RefServer
from benchpack.results.resultdir import read_rows
from benchpack.run.runner import run_pack
from tests.repo_task.test_repo_task_support import GREETING_FIX, fenced, run_options, tree_hash, write_repo_pack

pytestmark = pytest.mark.bubblewrap  # candidate code runs in the real sandbox

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "external-agent"
CHECK_GREETING = """\
    import argparse, pathlib, sys
    p = argparse.ArgumentParser()
    for n in ("--workspace", "--case", "--pack-id", "--pack-version", "--source-fixture-id", "--patch", "--output"):
        p.add_argument(n)
    a = p.parse_args()
    sys.exit(0 if "'hello'" in (pathlib.Path(a.workspace) / "app.py").read_text() else 1)
"""


def run(tmp_path, pack, replies, **option_overrides):
    with RefServer(responses=replies, ttft_s=0.0, itl_s=0.0) as srv:
        outcome = run_pack(pack, run_options(tmp_path, endpoint=srv.openai_url, **option_overrides))
    return outcome, read_rows(outcome.out / "run.jsonl")


def test_it_applies_a_model_diff_verifies_it_and_records_every_artifact(tmp_path):
    pack = write_repo_pack(tmp_path, verifier=CHECK_GREETING, repetitions=2)
    before = tree_hash(pack.root)
    outcome, rows = run(tmp_path, pack, [fenced(GREETING_FIX), "I could not fix it."])
    out = outcome.out
    assert [r["repo_task"] for r in rows] == [
        {"status": "passed", "verify_exit_code": 0},
        {"status": "failed", "verify_exit_code": 1, "failure_reason": "the verifier exited with status 1"},
    ]
    assert [r["sandbox"] for r in rows] == ["bubblewrap", "bubblewrap"]
    first, second = rows
    assert first["workspace"] == {"path": "workspace/fix/rep-001", "source_fixture_id": "repo", "source_path": "fixtures/repo"}
    assert first["patch"] == {"path": "patch/fix/rep-001.diff"}
    assert first["task"] == {"stdout_path": "task/fix/rep-001.stdout.log", "stderr_path": "task/fix/rep-001.stderr.log"}
    assert first["verify"]["path"] == "verify/fix/rep-001.json"
    assert first["scoring"] == {"mode": "verify-script", "passed": True}
    assert second["scoring"] == {"mode": "verify-script", "passed": False}
    assert (out / second["patch"]["path"]).read_text() == ""
    assert (out / second["task"]["stderr_path"]).read_text() == (
        "No fenced diff or patch block found in model output; workspace left unchanged.\n")
    assert tree_hash(pack.root) == before


HOSTILE = {
    "dotdot": (GREETING_FIX.replace("+++ b/app.py", "+++ b/../../../escape.py"),
               "Unsafe patch path 'b/../../../escape.py': '..' components are not allowed"),
    "absolute": (GREETING_FIX.replace("+++ b/app.py", "+++ /tmp/benchpack-escape.py"),
                 "Unsafe patch path '/tmp/benchpack-escape.py': absolute paths are not allowed"),
    "git-dir": ("*** Begin File: .git/hooks/post-checkout\n#!/bin/sh\n*** End File\n",
                "Unsafe replacement path '.git/hooks/post-checkout': .git paths are not allowed"),
    "garbage": ("@@ -1 +1 @@\n-a\n+b\n", "Fenced diff block has no file headers"),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_it_records_hostile_model_output_as_a_failed_row_with_a_precise_log(tmp_path, name):
    body, message = HOSTILE[name]
    pack = write_repo_pack(tmp_path, verifier=CHECK_GREETING)
    before = tree_hash(pack.root)
    outcome, rows = run(tmp_path, pack, [fenced(body)])
    [row] = rows
    assert row["ok"] is True and outcome.aborted is None
    assert (outcome.out / row["task"]["stderr_path"]).read_text().startswith(message)
    assert row["repo_task"] == {"status": "failed", "verify_exit_code": 1, "failure_reason": "the verifier exited with status 1"}
    assert (outcome.out / row["patch"]["path"]).read_text() == ""
    assert tree_hash(pack.root) == before
    assert not list(tmp_path.rglob("escape.py")) and not Path("/tmp/benchpack-escape.py").exists()


def test_it_checks_the_external_agent_argv_before_creating_the_output_directory(tmp_path, monkeypatch):
    monkeypatch.delenv("BENCHPACK_EXTERNAL_AGENT_ARGV", raising=False)
    pack = write_repo_pack(tmp_path, harness='{ id = "external-agent" }')
    with pytest.raises(ConfigError, match="BENCHPACK_EXTERNAL_AGENT_ARGV"):
        run_pack(pack, run_options(tmp_path))
    assert not (tmp_path / "out").exists()


def test_it_runs_the_model_call_agent_against_a_loopback_endpoint_and_summarizes_its_calls(tmp_path, monkeypatch):
    pack = write_repo_pack(tmp_path, harness='{ id = "external-agent", timeout_s = 30 }', verifier=None)
    with RefServer(responses=["unused by the runner", "content from the agent's own call"], ttft_s=0.0, itl_s=0.0) as srv:
        argv = [sys.executable, str(EXAMPLES / "model-call-agent.py"), "--model-call-url", srv.openai_url]
        monkeypatch.setenv("BENCHPACK_EXTERNAL_AGENT_ARGV", json.dumps(argv))
        outcome = run_pack(pack, run_options(tmp_path, endpoint=srv.openai_url))
        agent_request = srv.log()[-1]
    [row] = read_rows(outcome.out / "run.jsonl")
    out = outcome.out
    assert (out / "workspace/fix/rep-001/benchpack-model-call.txt").read_text() == "content from the agent's own call"
    assert json.dumps(agent_request).count("case fix repetition 1") >= 1
    telemetry = json.loads((out / "task/fix/rep-001.model-calls.jsonl").read_text())
    assert telemetry["ok"] is True and telemetry["endpoint"] == "loopback" and "content" not in telemetry
    assert "model_calls" not in json.dumps(row) and "context" not in json.dumps(row)
    summary = (out / "summary.md").read_text()
    assert "## External-agent model calls" in summary and "1 ok, 0 failed" in summary


@pytest.mark.parametrize("url", ["https://127.0.0.1:1/v1", "http://user:pw@127.0.0.1:1/v1",
                                 "http://127.0.0.1:1/v1?key=x", "http://example.com/v1"])
def test_it_ships_a_model_call_agent_that_refuses_non_loopback_or_credentialed_urls(tmp_path, url):
    import subprocess

    result = subprocess.run([sys.executable, str(EXAMPLES / "model-call-agent.py"), "--workspace", str(tmp_path),
                             "--case", "c", "--output-dir", str(tmp_path), "--repetition", "1",
                             "--context", str(tmp_path / "none.json"), "--model-call-url", url],
                            capture_output=True, text=True)
    assert result.returncode == 2 and "--model-call-url" in result.stderr
    assert url not in result.stderr  # never echo a URL that may carry credentials


def test_it_records_a_missing_git_as_a_task_outcome_not_a_traceback(tmp_path, monkeypatch, capsys):
    """Issue 9 §9: no git on PATH is an infrastructure error in the row, the run goes on."""
    import shutil

    from benchpack.cli import main

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "bwrap").symlink_to(shutil.which("bwrap"))  # the sandbox stays available, git does not
    monkeypatch.setenv("PATH", str(bin_dir))
    assert shutil.which("git") is None
    pack = write_repo_pack(tmp_path, verifier=CHECK_GREETING, repetitions=2)
    with RefServer(responses=[fenced(GREETING_FIX)], ttft_s=0.0, itl_s=0.0) as srv:
        code = main(["run", str(pack.root), "--adapter", "openai-chat", "--model", "m", "--endpoint", srv.openai_url,
                     "--out", str(tmp_path / "out")])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err + captured.out
    rows = read_rows(tmp_path / "out" / "run.jsonl")
    assert code == 0 and len(rows) == 2
    for row in rows:
        assert row["ok"] is True and row["scoring"] == {"mode": "verify-script", "passed": False}
        assert row["repo_task"]["status"] == "error"
        assert row["repo_task"]["failure_reason"] == "git is not on PATH: the fenced diff could not be applied"
    stderr = (tmp_path / "out" / rows[0]["task"]["stderr_path"]).read_text()
    assert stderr == "git is not on PATH: cannot apply the fenced diff; workspace left unchanged.\n"
    assert "git is not on PATH" in (tmp_path / "out" / "summary.md").read_text()
