"""Prefill on a real caching server: llama-server answers a repeated prompt
from its cache (93 of 94 tokens on the seed's runtime-sweep), so before
cold prompts the "prefill rate" was 10–600× the server's own. With the
bundled runtime-sweep's cold prompts every measured row is evaluated in
full, and the client's prefill figure is within a stated ratio of the
server's own `timings.prompt_per_second`.

The pack is the bundled runtime-sweep with only `max_tokens` lowered (its
prompts, nonce and warmup unchanged): prefill does not depend on how many
tokens follow, and eight keep the test short.
"""

from __future__ import annotations

import shutil

import pytest

from benchpack.results.cache_state import CACHED, COLD, group_cache_state, row_cache_state
from benchpack.cli import main
from benchpack.reporting.compare import compare_runs
from benchpack.packs.loader import bundled_packs_dir
from benchpack.results.resultdir import load_result_dir

pytestmark = [pytest.mark.real_server]

# Client prefill = prompt tokens / client TTFT. Client TTFT also holds the
# request's trip and the first decode step, so it reads a little under the
# server's own prompt rate; measured 0.991–0.997 on the project's machine.
# Stated bounds: within 25 % below and 5 % above the server's figure.
MIN_RATIO, MAX_RATIO = 0.75, 1.05


@pytest.fixture
def sweep(tmp_path):
    pack = tmp_path / "runtime-sweep"
    shutil.copytree(bundled_packs_dir() / "runtime-sweep", pack)
    manifest = pack / "benchpack.toml"
    manifest.write_text(manifest.read_text().replace("max_tokens = 128", "max_tokens = 8"))
    return pack


def run(server, pack, out, *extra) -> list[dict]:
    code = main(["run", str(pack), "--adapter", "openai-chat", "--model", server.model,
                 "--endpoint", server.base_url, "--out", str(out), "--repetitions", "2", "--lanes", "base", *extra])
    rows = load_result_dir(out).rows
    assert code == 0, [r.get("error") for r in rows]
    return rows


@pytest.mark.slow
def test_cold_prompts_are_evaluated_in_full_and_the_prefill_figure_matches_the_servers(llama_server, sweep, tmp_path):
    rows = run(llama_server, sweep, tmp_path / "cold")
    assert len(rows) == 6
    for row in rows:
        assert row["prompt_cache"]["policy"] == "cold" and row["prompt_cache"]["cache_prompt_param"] is False
        # The server evaluated every prompt token: nothing came from its cache.
        assert row["tokens"]["cached_prompt"] == 0 and row["backend"]["cache_n"] == 0
        assert row["backend"]["prompt_n"] == row["tokens"]["prompt"]
        assert row_cache_state(row) == COLD
        ratio = row["timing"]["prefill_tps"] / row["backend"]["prompt_per_second"]
        assert MIN_RATIO <= ratio <= MAX_RATIO, (row["case"], ratio)
    # The nonce line keeps the prompt-token count the same from request to request.
    for case in ("short", "medium", "long"):
        assert len({r["tokens"]["prompt"] for r in rows if r["case"] == case}) == 1
    comparison = compare_runs([load_result_dir(tmp_path / "cold")] * 2)
    assert {c.parity for c in comparison.cases} == {"comparable"}


@pytest.mark.slow
def test_without_cold_prompts_the_server_answers_from_its_cache_and_compare_says_cached(llama_server, sweep, tmp_path):
    rows = run(llama_server, sweep, tmp_path / "warm", "--prompt-cache", "server-default")
    assert all(r["tokens"]["cached_prompt"] >= 0.9 * r["tokens"]["prompt"] for r in rows)
    assert group_cache_state(rows) == CACHED
    comparison = compare_runs([load_result_dir(tmp_path / "warm")] * 2)
    assert {c.parity for c in comparison.cases} == {"cached"}
    assert all(s.medians["prefill_tps"] is None for c in comparison.cases for s in c.runs)


def test_the_servers_own_account_of_itself_is_recorded(llama_server, tmp_path):
    out = tmp_path / "props"
    code = main(["run", "smoke-chat", "--adapter", "openai-chat", "--model", "a-typo", "--endpoint",
                 llama_server.base_url, "--out", str(out)])
    assert code == 0
    result = load_result_dir(out)
    runtime = result.run_metadata["runtime"]
    assert runtime["name"] == "llama-server" and runtime["version"]
    assert runtime["config"]["context_size"] == 4096 and runtime["config"]["parallel_slots"] == 1
    assert runtime["config_source"] == "llama-server /props"
    assert result.run_metadata["model"]["served"] == llama_server.model
    assert result.run_metadata["model"]["file"] == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert all(r["model_served"] == llama_server.model for r in result.rows)
    assert all(r["warnings"][0]["code"] == "model-mismatch" for r in result.rows)
    assert all(r["finish_reason"] in ("stop", "length") for r in result.rows)
