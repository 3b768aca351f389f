"""The demo obeys physics (issue 32 item 2): every scripted system's speeds come from a model of its
hardware, sit under the plausibility bounds, fit in memory, and fall with depth.

Fast checks over the plan (no demo seeding): the rows each planned run would produce, computed from
the timing the scripted endpoint is given; and a real scripted endpoint measured at three depths.
The browser walk (test_e2e_demo_walk.py) checks the published rows of a live demo the same way.
"""

from __future__ import annotations

import functools
import json
import statistics
import time

import httpx
import pytest

from benchpack.packs.loader import load_pack, resolve_pack_path
from benchpack.refserver.server import RefServer
from registry_site import demo_physics as physics
from registry_site.demo_data import DEMO_MACHINES, demo_plan

OUTPUT_TOKENS = 32


def _row(run, case: str, prompt: int, depth: int = 0) -> dict:
    ttft = run.ttft_s + run.prefill_s_per_token * prompt + run.prefill_s_per_token_pair * prompt ** 2 / 2
    tpot = run.itl_s + run.itl_s_per_context_token * prompt
    return {"case": case, "ok": True, "model": run.model, "depth_tokens": depth or None,
            "timing": {"ttft_s": ttft, "tpot_s": tpot, "prefill_tps": prompt / ttft,
                       "decode_tps": (OUTPUT_TOKENS - 1) / (tpot * (OUTPUT_TOKENS - 1)),
                       "total_tps": OUTPUT_TOKENS / (ttft + tpot * (OUTPUT_TOKENS - 1))},
            "tokens": {"prompt": prompt, "output": OUTPUT_TOKENS, "cached_prompt": 0}}


@functools.cache
def _pack(pack_id: str):
    return load_pack(resolve_pack_path(pack_id))


def _planned_rows(run) -> list[dict]:
    pack = _pack(run.pack_id)
    rows = [_row(run, c.id, len((c.prompt or "x").split())) for c in pack.cases]
    if "depth" in run.lanes:
        base = len(next(c for c in pack.cases if c.id == "short").prompt.split())
        rows += [_row(run, "short", base + int(depth * 0.75), depth)
                 for depth in (0, 1024, 2048, 4096, 8192) if depth <= (run.max_depth or 0)]
    return rows


def _demo_runs():
    return [run for _, runs in demo_plan() for run in runs if run.machine is not None]


def test_every_planned_demo_row_is_under_the_bounds_and_fits_in_memory():
    runs = _demo_runs()
    assert len(runs) > 70
    for run in runs:
        metadata = {"model": {"id": run.model, "quantization": run.quantization}, "runtime": {"name": "demo-physics"}}
        problems = physics.row_problems(_planned_rows(run), DEMO_MACHINES[run.machine], metadata)
        assert not problems, (run.slug, problems)


def test_the_board_has_more_than_a_page_of_systems_and_only_combinations_that_fit():
    wrap = [r for r in _demo_runs() if r.pack_id == "desktop-django-wrap" and r.runtime_version == "scripted"]
    assert len({(r.model, r.machine) for r in wrap}) > 50
    assert ("demo/scripted-70b", "laptop") not in physics.fitting()
    with pytest.raises(ValueError, match="does not fit"):
        physics.speed("demo/scripted-70b", "laptop")
    # the checker itself catches a model that does not fit, and an impossible speed
    metadata = {"model": {"id": "demo/scripted-70b", "quantization": "Q4_K_M"}}
    assert physics.memory_problem(DEMO_MACHINES["laptop"], metadata, "demo/scripted-70b")
    fast = physics.speed("demo/scripted-8b", "server")
    impossible = _row(type("R", (), {**fast.refserver(), "model": "demo/scripted-8b"})(), "x", 50)
    assert physics.row_problems([impossible], DEMO_MACHINES["laptop"],
                                {"model": {"id": "demo/scripted-8b", "quantization": "Q4_K_M"}})


def test_a_realistic_spread_a_70b_is_slower_than_an_8b_and_the_h100_fastest():
    decode = {(m, k): physics.speed(m, k).decode_tps for m, k in physics.fitting()}
    assert decode[("demo/scripted-70b", "desktop")] < 5  # two thirds offloaded to DDR5
    assert decode[("demo/scripted-8b", "laptop")] < 25
    for model in ("demo/scripted-8b", "demo/scripted-32b"):
        on = {k: v for (m, k), v in decode.items() if m == model}
        assert max(on, key=on.get) == "server"
    values = sorted(decode.values())
    assert values[-1] / values[0] > 50  # from a couple of tok/s to hundreds


def _measure(url: str, words: int) -> float:
    """Prefill tok/s as the server reports it of one streamed request with a prompt of `words` words,
    after checking that the client saw every token and none sooner than the model's prefill allows.
    From the server's `timings` (as llama-server reports it): on a shared CI machine the client's TTFT
    of a short prompt is mostly its own scheduling delay."""
    body = {"model": "m", "stream": True, "max_tokens": OUTPUT_TOKENS,
            "messages": [{"role": "user", "content": " ".join(["word"] * words)}]}
    start = time.perf_counter()
    stamps, timings = [], {}
    with httpx.stream("POST", url, json=body, timeout=30) as response:
        for line in response.iter_lines():
            if line.startswith("data: ") and line != "data: [DONE]":
                chunk = json.loads(line[6:])
                timings = chunk.get("timings") or timings
                if chunk.get("choices") and chunk["choices"][0].get("delta", {}).get("content"):
                    stamps.append(time.perf_counter())
    assert stamps[0] - start >= timings["prompt_ms"] / 1000  # never sooner than the model says
    assert len(stamps) == OUTPUT_TOKENS
    return timings["prompt_per_second"]


def test_a_scripted_endpoint_given_the_model_slows_down_as_the_context_fills():
    """Real HTTP against the scripted endpoint with a demo system's configuration: prefill and decode
    both fall from a 100-word prompt to 1,500 and 3,000 words (attention, KV reads)."""
    speed = physics.speed("demo/scripted-8b", "studio")
    with RefServer(default_tokens=OUTPUT_TOKENS, **speed.refserver()) as server:
        prefill = [_measure(server.openai_url, words) for words in (100, 1500, 3000)]
        records = server.log()
    # Decode from the server's own schedule of each reply's tokens (its log: planned and actual send
    # times), not from the client's read times: on a loaded CI machine the client read most of a reply
    # in a few reads, and its median gap (52 µs) read as 19,332 tok/s.
    assert len(records) == 3
    decode = []
    for record in records:
        planned, sent = record["content_planned"], record["content_times"]
        assert len(planned) == OUTPUT_TOKENS and all(s >= p for p, s in zip(planned, sent))  # never early
        decode.append(1 / statistics.median(b - a for a, b in zip(planned, planned[1:])))
    assert prefill[0] > prefill[1] > prefill[2], prefill
    assert decode[0] > decode[2], decode
    assert prefill[0] < speed.prefill_tps  # never faster than the model says
