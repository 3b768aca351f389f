"""`benchpack run --agent`'s summary line: pass rate and the agent's speed together, worded and named
as the registry's surfaces word and name them (benchpack.results.metrics)."""

from __future__ import annotations

from benchpack.commands.run import agent_lines
from benchpack.results.metrics import metric, pass_text


def _row(passed, decode, ttft, solution, turns=3):
    return {"scoring": {"mode": "verify-script", "passed": passed},
            "agent_session": {"decode_tps_p50": decode, "ttft_p50_s": ttft, "time_to_solution_s": solution,
                              "turns": turns, "prompt_tokens": 1000, "output_tokens": 90}}


def test_the_line_carries_the_one_pass_rate_and_the_registered_agent_figures():
    rows = [_row(True, 40.0, 0.2, 10.0), _row(False, 50.0, 0.4, 30.0), _row(True, 45.0, 0.3, 20.0),
            {"scoring": {"passed": True}}]  # a row without an agent session is not the agent's
    [line] = agent_lines(rows)
    assert line.startswith(f"agent: pass rate {pass_text(2, 3)}; median per task: ")
    assert f"{metric('agent_decode_rate').label} 45.0 tok/s" in line
    assert f"{metric('agent_ttft_s').label} 0.300 s" in line
    assert f"{metric('time_to_solution_s').label} 20.0 s" in line
    assert "turns 3, tokens" in line and line.endswith("tokens in 1000 out 90")


def test_no_agent_session_no_line_and_unmeasured_figures_say_so():
    assert agent_lines([{"scoring": {"passed": True}}]) == []
    [line] = agent_lines([_row(None, None, None, 5.0)])
    assert "pass rate not scored" in line and "agent decode —," in line and "time to solution 5.0 s" in line
