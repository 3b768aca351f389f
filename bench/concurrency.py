"""Client accuracy at many concurrent streams: benchpack's concurrency lane and a plain aiohttp loop against the scripted endpoint.

The reference server serves `--streams` streams at once, each on its own
script, and logs when each token went out; the client sends them all at
once and stamps every chunk (benchpack.selfcheck.loadtest). Two scripts:

* staggered: every stream its own TTFT (20–200 ms) and token spacing (10–40 ms);
* lockstep: every stream TTFT 20 ms and 10 ms per token, tokens due at the
  same instants, as a batching server (llama-server -np N) emits them.

    uv run python bench/concurrency.py [--streams 64] [--rounds 3] [--runs 1]

Targets for a client (issue 12): TTFT overhead p99 ≤ 2 ms and per-stream
TPOT error ≤ 1 % at 64 streams. `--client benchpack` is the lane as
`benchpack run` drives it (one adapter, a worker thread per stream, the
bodies read by the level's one shared reader after each worker's first
reads, `loadtest.lane_client`, reads timed by the kernel's receive stamps where
the system has them: benchpack.adapters.rxstamp); `--client user-clock` the
same lane with reads timed in user space (as before rxstamp);
`--client aiohttp` the baseline; `all` (default) measures them in the same
run, one after the other per script.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
from dataclasses import replace

from benchpack.selfcheck import loadtest

COLUMNS = (
    ("streams", "streams_measured", "{:d}"),
    ("TTFT overhead median (ms)", "ttft_overhead_median_ms", "{:.3f}"),
    ("TTFT overhead p99 (ms)", "ttft_overhead_p99_ms", "{:.3f}"),
    ("TPOT err median (%)", "tpot_error_median_pct", "{:.3f}"),
    ("TPOT err p99 (%)", "tpot_error_p99_pct", "{:.3f}"),
    ("chunk delivery p50 / p99 (ms)", ("chunk_delivery_p50_ms", "chunk_delivery_p99_ms"), "{:.3f}"),
    ("server late p50 / p99 (ms)", ("server_late_p50_ms", "server_late_p99_ms"), "{:.3f}"),
    ("server write p99 (ms)", "server_write_p99_ms", "{:.3f}"),
    ("client CPU per chunk (µs)", "client_cpu_per_chunk_us", "{:.1f}"),
    ("failed streams", "failures", "{:d}"),
)


def cell(summary: dict, key, fmt: str) -> str:
    keys = key if isinstance(key, tuple) else (key,)
    return " / ".join("—" if summary[k] is None else fmt.format(summary[k]) for k in keys)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--streams", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=3, help="measured rounds per script (after a warm-up round)")
    parser.add_argument("--tokens", type=int, default=40)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--client", choices=("all", "benchpack", "user-clock", "aiohttp"), default="all")
    parser.add_argument("--script", choices=("both", "staggered", "lockstep"), default="both")
    args = parser.parse_args()
    clients = {"benchpack": loadtest.lane_client, "user-clock": lambda: loadtest.lane_client(kernel_stamps=False),
               "aiohttp": loadtest.aiohttp_client}
    names = list(clients) if args.client == "all" else [args.client]
    scripts = [(n, l) for n, l in (("staggered", False), ("lockstep", True)) if args.script in ("both", n)]
    print(f"Python {platform.python_version()}, {platform.system()} {platform.release()}, {os.cpu_count()} CPUs; "
          f"clients: {', '.join(names)}; {args.streams} concurrent streams × {args.rounds} rounds × {args.tokens} tokens.\n")
    print("| run | script | client | load avg | " + " | ".join(title for title, _, _ in COLUMNS) + " |")
    print("|---" * (len(COLUMNS) + 4) + "|")
    for run in range(1, args.runs + 1):
        for name, lockstep in scripts:
            plan = replace(loadtest.LoadPlan(), streams=args.streams, rounds=args.rounds, tokens=args.tokens,
                           lockstep=lockstep)
            for client_name in names:
                client = clients[client_name]()
                load = os.getloadavg()[0]
                try:
                    figures = loadtest.measure_load(client, plan, lambda text, name=name: print(f"  {name}: {text}", file=sys.stderr))
                finally:
                    client.close()
                summary = figures.summary()
                print(f"| {run} | {name} | {client_name} | {load:.1f} → {os.getloadavg()[0]:.1f} | "
                      + " | ".join(cell(summary, key, fmt) for _, key, fmt in COLUMNS) + " |", flush=True)
                for failure in figures.failures[:5]:
                    print(f"  {name} {client_name}: {failure}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
