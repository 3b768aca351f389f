"""Real coding agents from PyPI, in their own pinned environments, through the proxy, in the sandbox.

The scripted endpoint replays a session that solves `python-regression-fix`
in mini-swe-agent's own text format (one ```mswea_bash_command block per
answer): the real agent parses each answer, runs the command in the
workspace, sends the growing conversation back, and submits; the pack's
verifier then judges the workspace. Against the real llama-server the
agent runs until its step limit (SmolLM2-135M does not solve the task) and
every turn is recorded. The environments are built by `.ci/run`
(`python -m benchpack.agents.recipes`); a missing one is a skip here and a
failure under CI.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchpack import cli
from benchpack.agents import recipes
from benchpack.refserver.server import RefServer
from tests.environment import needs
from tests.repo_task.test_repo_task_support import write_repo_pack

ROOT = Path(__file__).resolve().parents[2]
FIX = (ROOT / "benchpacks/python-regression-fix/audit/fix-prerelease-order/known-good.md").read_text()
DIFF = FIX.split("```diff\n", 1)[1].split("```", 1)[0]
BLOCK = "```mswea_bash_command\n{}\n```"

# The runner's own adapter call takes the first answer; the agent's session follows.
SOLVING_SESSION = [
    "The agent harness will solve this task.",
    "THOUGHT: Let me read the sort key first.\n\n" + BLOCK.format("nl -ba versionkit/version.py | sed -n '50,70p'"),
    "THOUGHT: Prerelease identifiers compare as strings; numeric ones must compare as numbers.\n\n"
    + BLOCK.format(f"cat <<'EOF' > /tmp/fix.diff\n{DIFF}EOF\ngit apply /tmp/fix.diff && echo applied"),
    "THOUGHT: Run the existing tests.\n\n" + BLOCK.format("python -m unittest discover -s tests -t . 2>&1 | tail -3"),
    "THOUGHT: Done.\n\n" + BLOCK.format("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"),
]

MINI = recipes.RECIPES["mini-swe-agent"]
mini_installed = needs(lambda: recipes.installed(MINI),
                       f"{MINI.requirement} is not installed: python -m benchpack.agents.recipes mini-swe-agent")


def turns(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "agent-turns.jsonl").read_text().splitlines()]


def run_rows(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "run.jsonl").read_text().splitlines()]


@pytest.mark.slow
@pytest.mark.bubblewrap
@mini_installed
def test_real_mini_swe_agent_solves_a_bundled_task_replayed_by_the_scripted_endpoint(tmp_path, capsys):
    out = tmp_path / "out"
    with RefServer(SOLVING_SESSION, ttft_s=0.02, itl_s=0.001) as srv:
        code = cli.main(["run", "python-regression-fix", "--adapter", "openai-chat", "--model", "ref",
                         "--endpoint", srv.openai_url, "--out", str(out), "--agent", "mini-swe-agent",
                         "--agent-timeout", "120"])
    printed = capsys.readouterr().out
    (row,) = run_rows(out)
    assert code == 0, (out / "task/fix-prerelease-order/rep-001.stderr.log").read_text()[-3000:]
    assert row["sandbox"] == "bubblewrap"
    assert row["scoring"]["passed"] is True and row["repo_task"]["status"] == "passed"
    assert "numeric identifiers compare as numbers" in (out / "patch/fix-prerelease-order/rep-001.diff").read_text()
    recorded = turns(out)
    assert [t["turn"] for t in recorded] == [1, 2, 3, 4]  # every model call the agent made
    assert all(t["ok"] and t["streamed"] and t["api"] == "openai-chat" for t in recorded)
    prompts = [t["tokens"]["prompt"] for t in recorded]
    assert prompts == sorted(prompts) and prompts[0] < prompts[-1]  # the conversation grows turn by turn
    session = row["agent_session"]
    assert session["turns"] == 4 and session["error_turns"] == 0
    assert session["ttft_p50_s"] == pytest.approx(0.02, abs=0.03)
    assert session["prompt_growth_per_turn"] > 0
    assert session["time_to_solution_s"] > session["model_time_s"] > 0
    assert "agent: pass rate 100 % (1 of 1 task; 95 % interval 21–100 %); median per task: agent decode " in printed


@pytest.mark.slow
@pytest.mark.real_server
@pytest.mark.bubblewrap
@mini_installed
def test_real_mini_swe_agent_against_llama_server_runs_to_its_step_limit_with_every_turn_recorded(
        tmp_path, llama_server):
    # A small repo task with 64 output tokens per call (the pack's max_tokens, which the kit passes on):
    # SmolLM2-135M on one CPU thread would take minutes per call at the bundled pack's 4096.
    pack = write_repo_pack(tmp_path, harness='{ id = "external-agent", timeout_s = 300 }')
    out = tmp_path / "out"
    code = cli.main(["run", str(pack.root), "--adapter", "openai-chat", "--model", "smollm2-135m",
                     "--endpoint", llama_server.chat_url, "--out", str(out), "--agent", "mini-swe-agent",
                     "--agent-steps", "3", "--agent-timeout", "300"])
    assert code in (0, 1)
    (row,) = run_rows(out)
    stdout = (out / "task/fix/rep-001.stdout.log").read_text()
    stderr = (out / "task/fix/rep-001.stderr.log").read_text()
    assert "timed out" not in stderr  # it stopped on its own limit, not the harness's
    assert "exit_status=" in stdout, stderr[-3000:]
    recorded = turns(out)
    assert 1 <= len(recorded) <= 3
    assert all(t["ok"] and t["tokens"]["prompt"] and t["timing"]["ttft_s"] for t in recorded), recorded
    assert row["sandbox"] == "bubblewrap"
    assert row["agent_session"]["turns"] == len(recorded)
    assert row["agent_session"]["decode_tps_p50"] > 0
    # the runner's own request, whose answer the agent never sees, asked the real server for one token
    assert row["request"] == {**row["request"], "max_tokens": 64, "runner_max_tokens": 1}
    assert row["ok"] and row["tokens"]["output"] == 1 and row["timing"]["wall_s"] > 0, row


AIDER = recipes.RECIPES["aider"]
aider_installed = needs(lambda: recipes.installed(AIDER),
                        f"{AIDER.requirement} is not installed: python -m benchpack.agents.recipes aider")
SOURCE = (ROOT / "benchpacks/python-regression-fix/fixtures/versionkit-repo/versionkit/version.py").read_text()
OLD = "        prerelease = (0, self.prerelease) if self.prerelease else (1,)\n"
NEW = """\
        if self.prerelease:
            # numeric identifiers compare as numbers and sort before alphanumeric ones
            identifiers = tuple((0, int(i), "") if i.isdigit() else (1, 0, i) for i in self.prerelease)
            prerelease = (0, identifiers)
        else:
            prerelease = (1,)
"""


@pytest.mark.slow
@pytest.mark.bubblewrap
@aider_installed
def test_real_aider_solves_a_bundled_task_replayed_by_the_scripted_endpoint(tmp_path, capsys):
    assert OLD in SOURCE
    # aider fences a whole file with a fence no file in its chat contains: the pack's Markdown files hold ```,
    # so its prompt asks for ```` (aider's choose_fence), and its parser only takes that.
    whole_file = f"versionkit/version.py\n````python\n{SOURCE.replace(OLD, NEW)}````\n"
    out = tmp_path / "out"
    with RefServer(["The agent harness will solve this task.", whole_file], ttft_s=0.02, itl_s=0.0005) as srv:
        code = cli.main(["run", "python-regression-fix", "--adapter", "openai-chat", "--model", "ref",
                         "--endpoint", srv.openai_url, "--out", str(out), "--agent", "aider", "--agent-timeout", "180"])
    (row,) = run_rows(out)
    stderr = (out / "task/fix-prerelease-order/rep-001.stderr.log").read_text()
    assert code == 0 and row["scoring"]["passed"] is True, stderr[-3000:]
    assert row["sandbox"] == "bubblewrap"
    recorded = turns(out)
    assert len(recorded) >= 1 and all(t["ok"] for t in recorded), recorded
    assert row["agent_session"]["turns"] == len(recorded)
    assert "agent: pass rate 100 % (1 of 1 task; 95 % interval 21–100 %)" in capsys.readouterr().out
