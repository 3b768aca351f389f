"""An external agent's session through the measuring proxy, in the real sandbox and without one."""

from __future__ import annotations

import json
import sys
import textwrap
import time

import pytest

from benchpack.agents.proxy import proxy_factory
from benchpack.refserver.server import RefServer
from benchpack.repo_task.integration import RepoTaskExecutor
from benchpack.results.contract import ROW_DECODER
from tests.repo_task.test_repo_task_support import adapter_result, run_options, write_repo_pack

# Calls the endpoint the context names, `turns` times (forever with 0), growing its prompt, then writes a file.
AGENT = """\
import argparse, json, pathlib, urllib.request
p = argparse.ArgumentParser()
for n in ("--workspace", "--case", "--output-dir", "--repetition", "--context"):
    p.add_argument(n)
p.add_argument("--turns", type=int, default=3)
a = p.parse_args()
endpoint = json.loads(pathlib.Path(a.context).read_text())["adapter"]["endpoint"]
history, turn = "fix it", 0
while a.turns == 0 or turn < a.turns:
    turn += 1
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": history}], "stream": True,
                       "stream_options": {"include_usage": True}}).encode()
    req = urllib.request.Request(endpoint, body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        text = r.read().decode()
    history += " more words here"
pathlib.Path(a.workspace, "done.txt").write_text("done")
"""


@pytest.fixture(autouse=True)
def quiet_home(tmp_path, monkeypatch):
    (tmp_path / "home").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))


def session(tmp_path, srv, extra_args, unsandboxed, timeout_s=30):
    agent = tmp_path / "agent.py"
    agent.write_text(textwrap.dedent(AGENT))
    pack = write_repo_pack(tmp_path, harness=f'{{ id = "external-agent", timeout_s = {timeout_s} }}')
    options = run_options(tmp_path, unsandboxed=unsandboxed, endpoint=srv.openai_url)
    executor = RepoTaskExecutor(pack, options, external_agent_argv=[sys.executable, str(agent), *extra_args],
                                grace_s=0.3, proxy_factory=proxy_factory)  # fmt: skip
    execution = executor.prepare(pack.cases[0], 1, tmp_path / "out")
    return executor.finish(execution, adapter_result(""))


def turn_rows(tmp_path) -> list[dict]:
    return [json.loads(line) for line in (tmp_path / "out" / "agent-turns.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("unsandboxed", [pytest.param(False, marks=pytest.mark.bubblewrap),
                                         pytest.param(True, marks=pytest.mark.no_sandbox)], ids=["bwrap", "none"])
def test_every_turn_of_an_agent_session_is_recorded_and_summed_into_the_row(tmp_path, unsandboxed):
    with RefServer(["a b c d e f"], ttft_s=0.03, itl_s=0.005) as srv:
        row = session(tmp_path, srv, ["--turns", "3"], unsandboxed)
    turns = turn_rows(tmp_path)
    assert [t["turn"] for t in turns] == [1, 2, 3]
    assert all(t["ok"] and t["case"] == "fix" and t["repetition"] == 1 for t in turns)
    assert [t["tokens"]["prompt"] for t in turns] == [2, 5, 8]
    s = row["agent_session"]
    assert s["turns"] == 3 and s["error_turns"] == 0
    assert s["prompt_tokens"] == 15 and s["output_tokens"] == 18
    assert s["prompt_growth_per_turn"] == 3.0
    assert s["ttft_p50_s"] == pytest.approx(0.03, abs=0.02)
    assert s["time_to_solution_s"] > s["model_time_s"] > 0
    assert row["repo_task"]["status"] == "passed"
    decoded = ROW_DECODER.decode(json.dumps({"pack": {"id": "p", "version": "1"}, "case": "fix", "adapter": "a",
                                             "model": "m", "ok": True, **row}))
    assert decoded.agent_session.turns == 3


@pytest.mark.parametrize("unsandboxed", [pytest.param(False, marks=pytest.mark.bubblewrap),
                                         pytest.param(True, marks=pytest.mark.no_sandbox)], ids=["bwrap", "none"])
def test_an_agent_that_never_stops_ends_at_the_harness_limit_with_every_row_kept(tmp_path, unsandboxed):
    with RefServer(["a b c d e f g h"], ttft_s=0.01, itl_s=0.02) as srv:
        started = time.perf_counter()
        row = session(tmp_path, srv, ["--turns", "0"], unsandboxed, timeout_s=4)
        took = time.perf_counter() - started
    assert took < 15
    turns = turn_rows(tmp_path)  # every line whole JSON
    assert len(turns) >= 2 and sorted(t["turn"] for t in turns) == list(range(1, len(turns) + 1))
    assert sum(t["ok"] for t in turns) >= len(turns) - 1  # at most the one in flight was cut
    assert row["agent_session"]["turns"] == len(turns)
    stderr = (tmp_path / "out" / "task/fix/rep-001.stderr.log").read_text()
    assert "timed out after 4 seconds" in stderr


def test_the_report_shows_each_sessions_verdict_beside_its_speed(tmp_path):
    from benchpack.reporting.report import agent_session_table
    from benchpack.reporting.document import to_markdown

    session = {"time_to_solution_s": 29.5, "turns": 4, "error_turns": 0, "prompt_tokens": 6278, "output_tokens": 159,
               "ttft_p50_s": 0.0214, "ttft_p90_s": 0.0259, "decode_tps_p50": 983.8, "decode_tps_p90": 944.9,
               "prompt_growth_per_turn": 97.7, "cache_hit_share": 0.25}
    table = agent_session_table([{"case": "fix", "repetition": 1, "scoring": {"passed": True}, "agent_session": session},
                                 {"case": "chat"}])
    text = to_markdown([table])
    assert "| fix | 1 | yes |" in text and "97.7" in text and "25%" in text
    assert agent_session_table([{"case": "chat"}]) is None


# Passes only when the agent's session wrote done.txt into the workspace it was given.
CHECK_DONE = """\
import argparse, pathlib, sys
p = argparse.ArgumentParser()
for n in ("--workspace", "--case", "--pack-id", "--pack-version", "--source-fixture-id", "--patch", "--output"):
    p.add_argument(n)
sys.exit(0 if (pathlib.Path(p.parse_args().workspace) / "done.txt").is_file() else 1)
"""


@pytest.mark.parametrize("unsandboxed", [pytest.param(False, marks=pytest.mark.bubblewrap),
                                         pytest.param(True, marks=pytest.mark.no_sandbox)], ids=["bwrap", "none"])
def test_under_agent_the_runners_own_request_is_capped_and_the_verdict_is_the_agents(tmp_path, unsandboxed):
    # `benchpack run --agent`: the case's own request came first with the pack's whole max_tokens (a full
    # generation a slow local server spends minutes on) although the agent's turns are the work.
    from benchpack.run.runner import run_pack

    agent = tmp_path / "agent.py"
    agent.write_text(textwrap.dedent(AGENT))
    pack = write_repo_pack(tmp_path, verifier=CHECK_DONE)  # no harness: --agent makes the case an agent's
    assert pack.defaults.max_tokens == 64
    with RefServer(["a b c d e f"], ttft_s=0.01, itl_s=0.002) as srv:
        options = run_options(tmp_path, unsandboxed=unsandboxed, endpoint=srv.openai_url, probe_server=False,
                              agent="scripted-test-agent",
                              external_agent_argv=[sys.executable, str(agent), "--turns", "2"])
        outcome = run_pack(pack, options)
        bodies = [entry["body"] for entry in srv.log() if entry["path"].endswith("/chat/completions")]
    runner_requests = [b for b in bodies if "max_tokens" in b]  # the agent script sends none
    assert [b["max_tokens"] for b in runner_requests] == [1]
    assert not any(b.get("max_tokens") == 64 for b in bodies)
    assert len(bodies) == 3  # the runner's one request, then the agent's two turns
    [row] = outcome.rows
    assert row["request"]["max_tokens"] == 64 and row["request"]["runner_max_tokens"] == 1
    assert row["tokens"]["output"] == 1 and row["finish_reason"] == "length"
    # the verdict is the verifier's on the agent's work; the session's figures are the agent's turns
    assert row["repo_task"]["status"] == "passed" and row["scoring"]["passed"] is True
    s = row["agent_session"]
    assert s["turns"] == 2 and s["prompt_tokens"] == 2 + 5 and s["output_tokens"] == 12
    ROW_DECODER.decode(json.dumps(row))


def test_without_an_external_agent_the_runners_request_keeps_the_packs_budget(tmp_path):
    from benchpack.run.runner import request_record, runner_max_tokens

    pack = write_repo_pack(tmp_path)
    options = run_options(tmp_path)
    assert runner_max_tokens(pack, pack.cases[0], options) == 64
    assert "runner_max_tokens" not in request_record(pack, pack.cases[0], options)
    harnessed = write_repo_pack(tmp_path / "h", harness='{ id = "external-agent", timeout_s = 30 }')
    assert runner_max_tokens(harnessed, harnessed.cases[0], options) == 1
