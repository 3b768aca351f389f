"""`benchpack run` end to end against a real llama-server: the bundled packs
produce rows a user can trust (every row ok, token counts complete with their
source, the server's own timings kept) on a real model, not a script."""

from __future__ import annotations

import json

import pytest

from benchpack.cli import main
from benchpack.results.plausibility import PLAUSIBLE, run_row_verdicts
from benchpack.results.resultdir import load_result_dir

pytestmark = [pytest.mark.real_server, pytest.mark.slow]


def run_pack(server, pack_id: str, out) -> list[dict]:
    # The base cases only: the lanes have their own real-server tests (test_real_server_lanes.py).
    code = main(["run", pack_id, "--adapter", "openai-chat", "--model", server.model,
                 "--endpoint", server.chat_url, "--out", str(out), "--lanes", "base"])
    result = load_result_dir(out)
    rows = result.rows
    assert code == 0, [row.get("error") for row in rows]
    assert_plausible(result)
    return rows


def assert_plausible(result) -> None:
    """Every real row sits under the physical bound of the host it ran on, with the
    model's size the server itself reported (llama-server /v1/models meta)."""
    model = result.run_metadata["model"]
    assert model["size_source"] == "llama-server /v1/models meta"
    assert model["params"] > 100e6 and model["size_bytes"] > 50e6
    # The bound reads the server's figures where the runner keeps them apart from the user's values.
    server = result.run_metadata["benchpack"]["server_reported"]["model"]
    assert server["params"] == model["params"] and server["size_source"] == "llama-server /v1/models meta"
    verdicts = run_row_verdicts(result.rows, result.hardware, result.run_metadata)
    assert [v.status for v in verdicts] == [PLAUSIBLE] * len(verdicts), [v.reason for v in verdicts]


def assert_complete_tokens(row: dict) -> None:
    tokens = row["tokens"]
    assert tokens["prompt"] > 0
    assert tokens["output"] > 0
    assert isinstance(tokens["cached_prompt"], int)
    assert 0 <= tokens["cached_prompt"] <= tokens["prompt"]
    assert tokens["source"] == "usage"
    backend = row["backend"]
    # The server's own account of the same request, kept for cross-checks.
    assert backend["predicted_n"] == tokens["output"]
    assert backend["prompt_n"] + backend["cache_n"] == tokens["prompt"]
    assert backend["predicted_per_second"] > 0


def response_text(out, row: dict) -> str:
    payload = json.loads((out / row["raw"]["response_path"]).read_text())
    return payload["choices"][0]["message"]["content"]


def test_it_runs_smoke_chat_with_complete_rows(llama_server, tmp_path):
    out = tmp_path / "smoke"
    rows = run_pack(llama_server, "smoke-chat", out)

    assert [row["case"] for row in rows] == ["capital"]
    row = rows[0]
    assert row["ok"] is True
    assert row["model"] == llama_server.model
    assert_complete_tokens(row)
    assert row["timing"]["wall_s"] > 0
    assert row["timing"]["total_tps"] > 0
    # The score must agree with what the model said; and greedy decoding of
    # this prompt reliably says "The capital of France is Paris."
    assert row["scoring"]["mode"] == "contains"
    assert row["scoring"]["passed"] is ("Paris" in response_text(out, row))
    assert row["scoring"]["passed"] is True
    assert (out / "summary.md").is_file()


def test_it_runs_runtime_sweep_with_streamed_timings_and_cache_counts(llama_server, tmp_path):
    out = tmp_path / "sweep"
    rows = run_pack(llama_server, "runtime-sweep", out)

    assert sorted((row["case"], row["repetition"]) for row in rows) == [
        (case, rep) for case in ("long", "medium", "short") for rep in (1, 2, 3)]
    prompts = {}
    for row in rows:
        assert row["ok"] is True
        assert_complete_tokens(row)
        timing = row["timing"]
        for key in ("ttft_s", "ttfb_s", "prefill_tps", "decode_tps", "tpot_s"):
            assert timing[key] is not None and timing[key] > 0, key
        assert timing["ttft_s"] < timing["wall_s"]
        # Cold prompts: a unique nonce line and cache_prompt=false, so the
        # server evaluates every prompt in full although the warmup sent the
        # same text just before (docs/measurement.md).
        assert row["prompt_cache"]["policy"] == "cold" and row["tokens"]["cached_prompt"] == 0
        prompts.setdefault(row["case"], set()).add(row["tokens"]["prompt"])
        assert (out / row["raw"]["response_path"]).is_file()
    # Same prompt, same tokenizer: the count cannot vary between repetitions.
    assert all(len(counts) == 1 for counts in prompts.values()), prompts
    short, medium, long = (prompts[case].pop() for case in ("short", "medium", "long"))
    assert short < medium < long


@pytest.mark.bubblewrap
def test_it_runs_patch_from_failure_through_executor_and_verifier(llama_server, tmp_path):
    """A 135M model will rarely fix the repository; what a user relies on is
    that its real answer goes through the fenced-patch executor, patch
    capture and the verifier, and the row says exactly what happened."""
    out = tmp_path / "patch"
    code = main(["run", "patch-from-failure", "--adapter", "openai-chat", "--model", llama_server.model,
                 "--endpoint", llama_server.chat_url, "--out", str(out)])
    rows = load_result_dir(out).rows
    assert code in (0, 1)
    assert rows
    for row in rows:
        assert row["ok"] is True, row.get("error")
        assert_complete_tokens(row)
        assert row["repo_task"]["status"] in ("passed", "failed")
        assert row["scoring"] == {"mode": "verify-script", "passed": row["repo_task"]["status"] == "passed"}
        for artifact in (row["patch"]["path"], row["task"]["stdout_path"], row["task"]["stderr_path"],
                         row["verify"]["path"], row["verify"]["stdout_path"], row["verify"]["stderr_path"]):
            assert (out / artifact).is_file(), artifact
        verdict = json.loads((out / row["verify"]["path"]).read_text())
        assert verdict["passed"] is (row["repo_task"]["status"] == "passed")
        assert verdict["exit_code"] == row["repo_task"]["verify_exit_code"]
        task_log = (out / row["task"]["stdout_path"]).read_text() + (out / row["task"]["stderr_path"]).read_text()
        assert task_log.strip(), "the task phase must say what it did with the model's answer"
