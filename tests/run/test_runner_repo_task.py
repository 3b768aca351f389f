"""The repo-task hook: prepare before the adapter call, finish after it, fields into the row."""

import pytest

from benchpack.errors import BenchpackError, ConfigError, Problem
from benchpack.packs.loader import load_pack
from benchpack.results.resultdir import read_rows
from benchpack.run.runner import run_pack
from tests.run.test_runner_support import ScriptedAdapter, chat_case, options, write_pack

REPO_CASE = '''
id = "fix"
kind = "repo-task"
prompt = "Fix the bug."
fixture_refs = ["repo"]
scoring = { mode = "verify-script", script = "verify/check.py" }
'''
FIXTURES = '''
[[fixtures]]
id = "repo"
kind = "repo"
path = "fixtures/repo"
'''


def repo_pack(tmp_path, repetitions=1):
    root = tmp_path / "pack"
    (root / "fixtures" / "repo").mkdir(parents=True)
    (root / "fixtures" / "repo" / "app.py").write_text("x = 1\n")
    (root / "verify").mkdir()
    (root / "verify" / "check.py").write_text("raise SystemExit(0)\n")
    return load_pack(write_pack(root, [REPO_CASE, chat_case("chat")], repetitions=repetitions, extra=FIXTURES))


class FakeExecutor:
    def __init__(self, fail_on_prepare=None):
        self.calls = []
        self.fail_on_prepare = fail_on_prepare

    def prepare(self, case, repetition, out):
        self.calls.append(("prepare", case.id, repetition))
        if self.fail_on_prepare == repetition:
            raise BenchpackError(Problem("repo-task fix", "", "workspace already exists"))
        return {"case": case.id, "repetition": repetition}

    def finish(self, context, result):
        self.calls.append(("finish", context["case"], context["repetition"], result.output_text))
        stem = f"rep-{context['repetition']:03d}"
        return {
            "workspace": {"path": f"workspace/fix/{stem}", "source_fixture_id": "repo", "source_path": "fixtures/repo"},
            "patch": {"path": f"patch/fix/{stem}.diff"},
            "repo_task": {"status": "passed", "verify_exit_code": 0},
            "scoring": {"mode": "verify-script", "passed": True},
        }

    def summary_sections(self, rows, out):
        return ["## Repo-Task Outcomes\n\n1 passed"]


def test_it_wraps_each_measured_repo_task_call_in_prepare_and_finish(tmp_path):
    executor = FakeExecutor()
    adapter = ScriptedAdapter()
    outcome = run_pack(repo_pack(tmp_path, repetitions=2), options(tmp_path), adapter=adapter,
                       repo_task_executor=executor)

    assert executor.calls == [
        ("prepare", "fix", 1), ("finish", "fix", 1, "Paris is the capital."),
        ("prepare", "fix", 2), ("finish", "fix", 2, "Paris is the capital."),
    ]
    rows = read_rows(outcome.out / "run.jsonl")
    fix = [r for r in rows if r["case"] == "fix"]
    assert fix[1]["workspace"]["path"] == "workspace/fix/rep-002"
    assert fix[1]["patch"] == {"path": "patch/fix/rep-002.diff"}
    assert fix[0]["scoring"] == {"mode": "verify-script", "passed": True}
    assert all("workspace" not in r for r in rows if r["case"] == "chat")
    assert "## Repo-Task Outcomes" in (outcome.out / "summary.md").read_text()


def test_it_stops_the_run_when_the_repo_task_runner_fails(tmp_path):
    adapter = ScriptedAdapter()
    outcome = run_pack(repo_pack(tmp_path, repetitions=3), options(tmp_path), adapter=adapter,
                       repo_task_executor=FakeExecutor(fail_on_prepare=2))

    rows = read_rows(outcome.out / "run.jsonl")
    assert [(r["case"], r["ok"]) for r in rows] == [("fix", True), ("fix", False)]
    assert "workspace already exists" in rows[1]["error"]
    assert rows[1]["scoring"] == {"mode": "verify-script", "passed": False}
    assert len(adapter.requests) == 1
    assert outcome.aborted and not outcome.all_ok


def test_it_asks_the_repo_task_package_for_an_executor_before_writing_anything(tmp_path, monkeypatch):
    import benchpack.repo_task as repo_task

    def refuse(pack, opts, **_):
        raise ConfigError(Problem("BENCHPACK_EXTERNAL_AGENT_ARGV", "", "is not set"))

    monkeypatch.setattr(repo_task, "make_executor", refuse)
    with pytest.raises(ConfigError):
        run_pack(repo_pack(tmp_path), options(tmp_path), adapter=ScriptedAdapter())
    assert not (tmp_path / "out").exists()


def test_it_does_not_need_a_repo_task_executor_for_chat_packs(tmp_path, monkeypatch):
    import benchpack.repo_task as repo_task

    monkeypatch.setattr(repo_task, "make_executor", lambda *a: pytest.fail("not needed"))
    root = write_pack(tmp_path / "pack", [chat_case("chat")])
    outcome = run_pack(load_pack(root), options(tmp_path), adapter=ScriptedAdapter())
    assert outcome.all_ok
