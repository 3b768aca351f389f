"""The depth and concurrency lanes against a real llama-server: the bundled runtime-sweep 1.1.0's
lanes (shortened: fewer tokens, depths and requests) give rows whose client figures agree with the
server's own `timings`, every depth evaluated cold, and levels that really overlap (-np 4)."""

from __future__ import annotations

import json
import re
import shutil
import statistics

import pytest

from benchpack.results.cache_state import COLD, row_cache_state
from benchpack.cli import main
from benchpack.lanes import aggregate
from benchpack.packs.loader import bundled_packs_dir
from benchpack.results.resultdir import load_result_dir

pytestmark = [pytest.mark.exclusive, pytest.mark.real_server, pytest.mark.slow]


def sweep_copy(tmp_path, *, max_tokens: int, concurrency: str | None = None):
    pack = tmp_path / "runtime-sweep"
    shutil.copytree(bundled_packs_dir() / "runtime-sweep", pack)
    manifest = pack / "benchpack.toml"
    text = manifest.read_text().replace("max_tokens = 128", f"max_tokens = {max_tokens}")
    if concurrency:
        text = re.sub(r"\[lanes\.concurrency\]\n(.*\n){3}", concurrency, text)
    manifest.write_text(text)
    return pack


def run(server, pack, out, *extra) -> list[dict]:
    code = main(["run", str(pack), "--adapter", "openai-chat", "--model", server.model,
                 "--endpoint", server.base_url, "--out", str(out), *extra])
    rows = load_result_dir(out).rows
    assert code == 0, [r.get("error") for r in rows]
    return rows


def test_depth_lane_is_cold_at_every_depth_and_matches_the_servers_timings(llama_server, tmp_path):
    pack = sweep_copy(tmp_path, max_tokens=8)
    rows = run(llama_server, pack, tmp_path / "depth", "--lanes", "depth", "--max-depth", "2048", "--repetitions", "1")
    assert [r["depth_tokens"] for r in rows] == [0, 1024, 2048]
    metadata = json.loads((tmp_path / "depth" / "run-metadata.json").read_text())
    assert ("depth 4096 skipped: with max_tokens 8 it does not fit the server's context of 4096 tokens per slot"
            in metadata["warnings"])
    assert "depth 8192 skipped: with max_tokens 8 it does not fit the server's context of 4096 tokens per slot" \
        in metadata["warnings"]
    base = rows[0]["tokens"]["prompt"]
    for row in rows:
        assert row["ok"] and row_cache_state(row) == COLD and row["tokens"]["cached_prompt"] == 0
        # About one token per filler word on this tokenizer (measured 1.07; docs/lanes.md).
        extra = row["tokens"]["prompt"] - base
        assert row["depth_tokens"] * 0.95 <= extra <= row["depth_tokens"] * 1.25 + 30
        # Client prefill (prompt / client TTFT) against the server's own prompt rate, as for the base cases.
        assert 0.75 <= row["timing"]["prefill_tps"] / row["backend"]["prompt_per_second"] <= 1.05
    # The client's decode rate against the server's: 7 gaps per reply, so one slow step on a shared
    # machine moves a single row a lot (measured 1.94 once at load 26); the median over depths holds.
    ratios = [(1 / row["timing"]["tpot_s"]) / row["backend"]["predicted_per_second"] for row in rows]
    assert all(0.5 <= ratio <= 2.0 for ratio in ratios)
    assert 0.8 <= statistics.median(ratios) <= 1.25
    curve = aggregate.depth_curves(rows)["short"]
    assert [p["cache_state"] for p in curve] == [COLD] * 3 and all(p["prefill_tps"] for p in curve)
    # Deeper context costs more time to the first token.
    assert curve[0]["ttft_s"] < curve[1]["ttft_s"] < curve[2]["ttft_s"]


def test_concurrency_lane_overlaps_and_agrees_with_the_servers_timings(llama_server_parallel, tmp_path):
    pack = sweep_copy(tmp_path, max_tokens=16,
                      concurrency='[lanes.concurrency]\nlevels = [1, 4]\nrequests = 8\ncases = ["short"]\n')
    rows = run(llama_server_parallel, pack, tmp_path / "load", "--lanes", "concurrency")
    assert len(rows) == 16 and all(r["ok"] for r in rows)
    metadata = json.loads((tmp_path / "load" / "run-metadata.json").read_text())
    assert metadata["runtime"]["config"]["parallel_slots"] == 4
    one, four = aggregate.level_aggregates(rows, aggregate.slo_from(metadata["lanes"]["slo"]), metadata["lanes"]["levels"])
    for agg in (one, four):
        members = [r for r in rows if r["concurrency"] == agg["level"]]
        # The client's token count over the level is the server's.
        assert agg["output_tokens"] == sum(r["backend"]["predicted_n"] for r in members)
        ratios = [(1 / r["timing"]["tpot_s"]) / r["backend"]["predicted_per_second"] for r in members]
        assert 0.8 <= statistics.median(ratios) <= 1.25
        assert agg["goodput"] is not None and 0 <= agg["goodput"] <= 1
    # Level 4 really had four requests on the server at once: its slots were busy ~4× the wall time.
    members = [r for r in rows if r["concurrency"] == 4]
    busy = sum(r["backend"]["prompt_ms"] + r["backend"]["predicted_ms"] for r in members) / 1000
    assert busy / four["duration_s"] > 2.0
    # Whether four slots finish sooner than one is the machine's answer, not the client's (on 2 shared
    # CPUs with -t 1 they did not: docs/lanes.md); the client's own offsets show the overlap.
    events = sorted([(r["load"]["sent_offset_s"], 1) for r in members] + [(r["load"]["done_offset_s"], -1) for r in members])
    in_flight = [0]
    for _, step in events:
        in_flight.append(in_flight[-1] + step)
    assert max(in_flight) == 4
