"""The lanes end to end, with their measured error: against the scripted endpoint, and against llama-server.

    uv run python bench/lanes.py scripted   # depth + concurrency lanes vs the scripted endpoint (known truth)
    uv run python bench/lanes.py real       # llama-server: depth lane (-np 1), concurrency lane (-np 4)

*scripted*: the reference server charges a scripted prefill time per prompt
token and slows decode per context token, and logs when each token really
went out. Each row is paired with its log record by its nonce, so:
  - prefill error = client prefill_tps / the scripted rate − 1 (the client's
    TTFT also holds the request's upload and the server's read of it);
  - TTFT error = client TTFT − (server's first-content send − its read of the request);
  - TPOT error = |client TPOT − the server's own token spacing| / spacing.
The concurrency lane runs the same way at 1, 8 and 64 streams.

*real*: llama-server (tests/realserver.py: SmolLM2-135M Q4_1, -c 4096,
-t 1 -tb 2) runs runtime-sweep's `short` case through a depth lane (0 to
3072 tokens, -np 1) and a concurrency lane (1, 2, 4, 8 streams, -np 4), and
each row's client figures are set against the server's own `timings`.
Prints Markdown; docs/lanes.md has the figures.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchpack.lanes import aggregate  # noqa: E402
from benchpack.packs.lane_filler import filler_sha256  # noqa: E402
from benchpack.packs.loader import bundled_packs_dir, load_pack  # noqa: E402
from benchpack.refserver.server import RefServer  # noqa: E402
from benchpack.results.resultdir import load_result_dir  # noqa: E402
from benchpack.run.runner import RunOptions, run_pack  # noqa: E402
from benchpack.measurement.stats import percentile  # noqa: E402

NONCE = re.compile(r"\[nonce (\d{20})\]")


def write_pack(root: Path, *, depths: list[int] | None, levels: list[int] | None, requests: int,
               repetitions: int, max_tokens: int, prompt: str | None = None, warmup: int = 0) -> Path:
    """runtime-sweep's `short` case with the lanes this measurement needs (the filler re-pinned for its depths)."""
    sweep = load_pack(bundled_packs_dir() / "runtime-sweep")
    short = next(c for c in sweep.cases if c.id == "short")
    text = prompt if prompt is not None else short.prompt
    lanes = ""
    if depths:
        lanes += (f"[lanes.depth]\ndepths = {depths}\nseed = 2026\nfiller_sha256 = \"{filler_sha256(2026, depths)}\"\n")
    if levels:
        lanes += f"[lanes.concurrency]\nlevels = {levels}\nrequests = {requests}\n[lanes.slo]\nttft_s = 2.0\ntpot_s = 0.1\n"
    root.mkdir(parents=True, exist_ok=True)
    (root / "benchpack.toml").write_text(
        f'[pack]\nid = "lanes-bench"\nversion = "1.0.0"\n[defaults]\ntemperature = 0\nmax_tokens = {max_tokens}\n'
        f'stream = true\nwarmup = {warmup}\nrepetitions = {repetitions}\nprompt_cache = "cold"\n'
        f'[[cases]]\nid = "short"\nkind = "chat"\nprompt = """{text}"""\n{lanes}')
    return root


def run(pack_dir: Path, endpoint: str, out: Path, lanes: tuple[str, ...]) -> list[dict]:
    run_pack(load_pack(pack_dir), RunOptions(adapter="openai-chat", model="smollm2-135m", endpoint=endpoint, out=out,
                                             host_label="bench", lanes=lanes))
    return load_result_dir(out).rows


def pct(values: list[float], p: float) -> float | None:
    return percentile(values, p) if values else None


def fmt(value, spec="{:.3f}") -> str:
    return "—" if value is None else spec.format(value)


# --- scripted ---------------------------------------------------------------------

def scripted(work: Path) -> None:
    prefill_s, itl_s, per_context = 0.0005, 0.010, 0.000002  # 2000 tok/s prefill; 10 ms + 2 µs per context token
    print(f"Scripted endpoint: prefill {1 / prefill_s:.0f} tok/s, token gap 10 ms + {per_context * 1e6:.0f} µs per "
          f"prompt token, TTFT = 5 ms + prompt × {prefill_s * 1000} ms; 40 output tokens.\n")
    with RefServer(ttft_s=0.005, itl_s=itl_s, default_tokens=40, prefill_s_per_token=prefill_s,
                   itl_s_per_context_token=per_context, prompt_cache=True) as srv:
        pack = write_pack(work / "depth-pack", depths=[0, 1024, 4096, 16384], levels=None, requests=1,
                          repetitions=5, max_tokens=40)
        rows = run(pack, srv.openai_url, work / "depth", ("depth",))
        log = {NONCE.search(r["body"]["messages"][0]["content"]).group(1): r for r in srv.log()
               if r.get("body") and NONCE.search(str(r["body"].get("messages")))}
        print("| depth | n | prompt tokens | prefill client / scripted (tok/s) | prefill error | TTFT error median / max (ms) "
              "| TPOT client / server (ms) | TPOT error median / max |")
        print("|---|---|---|---|---|---|---|---|")
        for depth in sorted({r["depth_tokens"] for r in rows}):
            members = [r for r in rows if r["depth_tokens"] == depth and r["ok"]]
            prefill_err, ttft_err, tpot_err, tpot_c, tpot_s = [], [], [], [], []
            scripted_rate = None
            for row in members:
                record = log[f"{int(row['prompt_cache']['nonce'], 16):020d}"]
                sent = record["content_times"]
                evaluated = row["tokens"]["prompt"] - row["tokens"]["cached_prompt"]
                scripted_ttft = 0.005 + prefill_s * evaluated
                scripted_rate = row["tokens"]["prompt"] / scripted_ttft
                prefill_err.append((row["timing"]["prefill_tps"] / scripted_rate - 1) * 100)
                ttft_err.append((row["timing"]["ttft_s"] - (sent[0] - record["received_at"])) * 1000)
                truth = (sent[-1] - sent[0]) / (len(sent) - 1)
                tpot_c.append(row["timing"]["tpot_s"])
                tpot_s.append(truth)
                tpot_err.append(abs(row["timing"]["tpot_s"] - truth) / truth * 100)
            print(f"| {depth} | {len(members)} | {statistics.median(r['tokens']['prompt'] for r in members):g} | "
                  f"{statistics.median(r['timing']['prefill_tps'] for r in members):.0f} / {scripted_rate:.0f} | "
                  f"{statistics.median(prefill_err):+.2f} % | {statistics.median(ttft_err):.3f} / {max(ttft_err):.3f} | "
                  f"{statistics.median(tpot_c) * 1000:.3f} / {statistics.median(tpot_s) * 1000:.3f} | "
                  f"{statistics.median(tpot_err):.3f} % / {max(tpot_err):.3f} % |", flush=True)
        print()
        srv.configure(prefill_s_per_token=0.0, itl_s_per_context_token=0.0, ttft_s=0.02, prompt_cache=False)
        srv.reset()
        # warmup = 1: each level first opens its connections with N unrecorded requests, as the bundled packs do.
        pack = write_pack(work / "load-pack", depths=None, levels=[1, 8, 64], requests=128, repetitions=1,
                          max_tokens=40, prompt="Say something.", warmup=1)
        rows = run(pack, srv.openai_url, work / "load", ("concurrency",))
        log = {NONCE.search(r["body"]["messages"][0]["content"]).group(1): r for r in srv.log()
               if r.get("body") and NONCE.search(str(r["body"].get("messages")))}
        print("| streams | ok / requests | wall (s) | output tok/s (client) | ideal (N × 40 / 0.41 s) | TTFT overhead p50 / p99 (ms) "
              "| TPOT error p50 / p99 | goodput |")
        print("|---|---|---|---|---|---|---|---|")
        for agg in aggregate.level_aggregates(rows, pack_slo()):
            level = int(agg["level"])
            members = [r for r in rows if r.get("concurrency") == level and r["ok"]]
            overhead, tpot_err = [], []
            for row in members:
                record = log[f"{int(row['prompt_cache']['nonce'], 16):020d}"]
                sent = record["content_times"]
                overhead.append((row["timing"]["ttft_s"] - (sent[0] - record["received_at"])) * 1000)
                truth = (sent[-1] - sent[0]) / (len(sent) - 1)
                tpot_err.append(abs(row["timing"]["tpot_s"] - truth) / truth * 100)
            ideal = level * 40 / (0.02 + 39 * itl_s)
            print(f"| {level} | {agg['ok']} / {agg['requests']} | {fmt(agg['duration_s'], '{:.2f}')} | "
                  f"{fmt(agg['output_tps'], '{:.0f}')} | {ideal:.0f} | {fmt(pct(overhead, 50))} / {fmt(pct(overhead, 99))} | "
                  f"{fmt(pct(tpot_err, 50))} % / {fmt(pct(tpot_err, 99))} % | {fmt(agg['goodput'], '{:.2f}')} |", flush=True)


def pack_slo():
    from benchpack.packs.lane_spec import Slo
    return Slo(ttft_s=2.0, tpot_s=0.1)


# --- real llama-server -----------------------------------------------------------

def real(work: Path) -> None:
    from tests.realserver import running_server

    print("llama-server (SmolLM2-135M-Instruct Q4_1, -c 4096 -t 1 -tb 2), runtime-sweep's `short` prompt, cold.\n")
    with running_server(work, parallel=1) as server:
        pack = write_pack(work / "depth-pack", depths=[0, 512, 1024, 2048, 3072], levels=None, requests=1,
                          repetitions=3, max_tokens=32)
        rows = run(pack, server.base_url, work / "depth", ("depth",))
    print("Depth lane (-np 1):\n")
    print("| depth | n | prompt tokens | cache | prefill client / server (tok/s) | ratio | TTFT (s) "
          "| decode 1/TPOT client / server (tok/s) | ratio |")
    print("|---|---|---|---|---|---|---|---|---|")
    for point in aggregate.depth_curves(rows)["short"]:
        members = [r for r in rows if r["depth_tokens"] == point["depth_tokens"] and r["ok"]]
        server_decode = statistics.median(r["backend"]["predicted_per_second"] for r in members)
        print(f"| {point['depth_tokens']} | {point['ok']} | {point['prompt_tokens']:g} | {point['cache_state']} | "
              f"{fmt(point['prefill_tps'], '{:.1f}')} / {fmt(point['server_prefill_tps'], '{:.1f}')} | "
              f"{fmt(point['prefill_tps'] / point['server_prefill_tps'] if point['prefill_tps'] else None)} | "
              f"{point['ttft_s']:.3f} | {fmt(point['decode_rate'], '{:.1f}')} / {server_decode:.1f} | "
              f"{fmt(point['decode_rate'] / server_decode if point['decode_rate'] else None)} |", flush=True)
    print()
    with running_server(work, parallel=4) as server:
        pack = write_pack(work / "load-pack", depths=None, levels=[1, 2, 4, 8], requests=16, repetitions=1,
                          max_tokens=64)
        rows = run(pack, server.base_url, work / "load", ("concurrency",))
    print("Concurrency lane (-np 4, 16 requests per level):\n")
    print("| streams | ok / req | wall (s) | output tok/s client / server | req/s | TTFT p50 (s) | per-stream decode "
          "client / server (tok/s) | ratio min–max | slots busy | goodput |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for agg in aggregate.level_aggregates(rows, pack_slo()):
        members = [r for r in rows if r.get("concurrency") == agg["level"] and r["ok"]]
        ratios = [(1 / r["timing"]["tpot_s"]) / r["backend"]["predicted_per_second"] for r in members
                  if r["timing"]["tpot_s"] and r["backend"].get("predicted_per_second")]
        client_decode = statistics.median(1 / r["timing"]["tpot_s"] for r in members if r["timing"]["tpot_s"])
        server_decode = statistics.median(r["backend"]["predicted_per_second"] for r in members)
        # The server's own aggregate: the tokens its timings say it decoded, over the level's wall time;
        # and how many slots were busy on average (its prompt + decode time over the wall time).
        server_tps = sum(r["backend"]["predicted_n"] for r in members) / agg["duration_s"]
        busy = sum(r["backend"]["prompt_ms"] + r["backend"]["predicted_ms"] for r in members) / 1000 / agg["duration_s"]
        print(f"| {int(agg['level'])} | {agg['ok']} / {agg['requests']} | {agg['duration_s']:.2f} | "
              f"{agg['output_tps']:.1f} / {server_tps:.1f} | {agg['requests_per_s']:.2f} | {agg['ttft_s'].get('p50', 0):.3f} | "
              f"{client_decode:.1f} / {server_decode:.1f} | {min(ratios):.3f}–{max(ratios):.3f} | {busy:.2f} | "
              f"{fmt(agg['goodput'], '{:.2f}')} |", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("what", choices=("scripted", "real"))
    parser.add_argument("--keep", type=Path, help="keep the result directories here")
    args = parser.parse_args()
    print(f"Python {platform.python_version()}, {platform.system()} {platform.release()}, {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.1f}.\n")
    work = Path(tempfile.mkdtemp(prefix="bench-lanes-"))
    try:
        (scripted if args.what == "scripted" else real)(work)
    finally:
        print(f"\nload average after: {os.getloadavg()[0]:.1f}")
        if args.keep:
            shutil.copytree(work, args.keep, dirs_exist_ok=True)
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
