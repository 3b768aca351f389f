"""Measurement-accuracy benchmark: benchpack vs plain httpx and aiohttp loops.

The same comparison as `benchpack selftest`, with more samples, printed as a
Markdown table for docs/measurement.md. All three clients run interleaved
against the reference server in one run, so the comparison holds on a noisy
machine even when the absolute figures move.

    uv run python bench/measurement.py [--requests-scale N]

`--field` measures under field conditions instead (benchpack.selfcheck.fieldtest):
each client its own process at normal priority, `benchpack` with its live
progress bar as `benchpack run` shows it on a terminal, a CPU-bound
neighbour on the last CPU, requests interleaved; one table row per run:

    uv run python bench/measurement.py --field --runs 5 [--ablate]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
from dataclasses import replace

from benchpack.selfcheck import selftest


def markdown(summaries: dict[str, dict]) -> str:
    names = list(summaries)
    lines = ["| figure | " + " | ".join(names) + " | target |", "|---" * (len(names) + 2) + "|"]
    for target in selftest.TARGETS:
        cells = ["—" if summaries[n][target.metric] is None else f"{summaries[n][target.metric]:.3f}" for n in names]
        lines.append(f"| {target.label} ({target.unit}) | " + " | ".join(cells) + f" | ≤ {target.limit:g} |")
    return "\n".join(lines)


def bare_recv_floor(tokens: int = 400, requests: int = 20) -> float:
    """CPU µs per chunk of a bare blocking recv() loop on the same stream: no HTTP, SSE or JSON work at all.

    The floor any client that wakes once per chunk pays on this machine
    (kernel wake-up, context switch, copy, and Python's call into recv).
    """
    import json
    import socket
    import statistics
    import time

    from benchpack.refserver.server import RefServer

    body = json.dumps({"model": "ref", "messages": [{"role": "user", "content": "x"}], "max_tokens": tokens,
                       "stream": True}).encode()
    with RefServer(responses=[{"tokens": tokens}], ttft_s=0.005, itl_s=0.0005, timings=False) as srv:
        host, port = srv.url.split("//")[1].rsplit(":", 1)
        with socket.create_connection((host, int(port))) as sock:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            wire = (b"POST /v1/chat/completions HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"
                    b"Content-Length: %d\r\n\r\n%s" % (host.encode(), len(body), body))
            per_chunk = []
            for _ in range(requests + 1):  # the first one warms up
                cpu = time.process_time()
                sock.sendall(wire)
                while not sock.recv(65536).endswith(b"0\r\n\r\n"):
                    pass
                per_chunk.append((time.process_time() - cpu) / tokens * 1e6)
    return statistics.median(per_chunk[1:])


def _cell(summaries: dict[str, dict], names: list[str], metric: str, digits: int) -> str:
    values = [summaries[name][metric] for name in names]
    return " / ".join("—" if v is None else f"{v:.{digits}f}" for v in values)


def field_runs(runs: int, scale: float, ablate: bool, neighbours: int, ttft_only: bool = False) -> int:
    from benchpack.selfcheck import fieldtest

    specs = fieldtest.DEFAULT_CLIENTS + (fieldtest.ABLATIONS if ablate else ())
    plan = fieldtest.FieldPlan().scaled(scale)
    if ttft_only:  # many short requests: a steadier p99; the 0.5 ms phase shrinks to one request
        plan = fieldtest.FieldPlan(slow_requests=round(600 * scale), slow_tokens=4, fast_requests=1, ttft_s=0.005)
    names = [spec.name for spec in specs]
    print(f"Python {platform.python_version()}, {platform.system()} {platform.release()}, {os.cpu_count()} CPUs; "
          f"{neighbours} CPU-bound neighbour(s) on CPU {fieldtest.last_cpu()}; per client and run: "
          f"{plan.slow_requests}×{plan.slow_tokens} tokens @ 10 ms, {plan.fast_requests}×{plan.fast_tokens} tokens "
          f"@ 0.5 ms (TTFT {plan.ttft_s * 1e3:g} ms). Cells: {' / '.join(names)}.\n")
    print("| run | load avg (1 min) | TTFT median (ms) | TTFT p99 (ms) | CPU per chunk @ 10 ms (µs) "
          "| CPU per chunk @ 0.5 ms (µs) | TPOT err @ 10 ms (%) | TPOT err @ 0.5 ms (%) | server write p99 (ms) "
          "| targets |")
    print("|---" * 10 + "|")
    failed = 0
    for run in range(1, runs + 1):
        result = fieldtest.measure_field(plan, specs, neighbours=neighbours)
        slow = {name: figures.summary() for name, figures in result.slow.items()}
        fast = {name: figures.summary() for name, figures in result.fast.items()}
        checks = fieldtest.field_verdict(result)
        failed += not all(check.passed for check in checks)
        load = "—" if result.load_before is None else f"{result.load_before[0]:.1f} → {result.load_after[0]:.1f}"
        print(f"| {run} | {load} | {_cell(slow, names, 'ttft_median_ms', 3)} | {_cell(slow, names, 'ttft_p99_ms', 3)} "
              f"| {_cell(slow, names, 'cpu_per_chunk_us', 1)} | {_cell(fast, names, 'cpu_per_chunk_us', 1)} "
              f"| {_cell(slow, names, 'tpot_error_pct', 3)} | {_cell(fast, names, 'tpot_error_pct', 3)} "
              f"| {result.server_send_p99_ms:.3f} | {sum(c.passed for c in checks)}/{len(checks)} |", flush=True)
        for check in checks:
            if not check.passed:
                print(f"  run {run} missed: {check.label} ({check.detail})", file=sys.stderr)
    print(f"\nTargets (benchpack): TTFT p99 ≤ {fieldtest.TTFT_P99_LIMIT_MS:g} ms and ≤ aiohttp's, CPU per chunk "
          f"≤ {fieldtest.CPU_RATIO_LIMIT:g}× aiohttp's at both rates; {runs - failed} of {runs} runs met all of them.")
    return 0 if not failed else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests-scale", type=float, default=1.0, help="multiply the sample counts")
    parser.add_argument("--normal-priority", action="store_true",
                        help="no real-time priority for the latency phases (see selftest.measure)")
    parser.add_argument("--field", action="store_true",
                        help="field conditions: clients in separate processes, normal priority, a busy neighbour")
    parser.add_argument("--runs", type=int, default=1, help="--field: how many runs (one table row each)")
    parser.add_argument("--ablate", action="store_true",
                        help="--field: add benchpack with each of its fixes undone, to show what each contributes")
    parser.add_argument("--neighbours", type=int, default=1, help="--field: CPU-bound neighbour processes (default 1)")
    parser.add_argument("--ttft-only", action="store_true",
                        help="--field: 600 four-token requests per client (TTFT 5 ms) for a steadier TTFT p99")
    args = parser.parse_args()
    if args.field:
        return field_runs(args.runs, args.requests_scale, args.ablate, args.neighbours, args.ttft_only)
    plan = selftest.THOROUGH
    plan = replace(plan, ttft_requests=int(plan.ttft_requests * args.requests_scale),
                   slow_requests=max(1, int(plan.slow_requests * args.requests_scale)),
                   fast_requests=max(1, int(plan.fast_requests * args.requests_scale)))
    done = [0]
    total = plan.total_requests(3)

    def step() -> None:
        done[0] += 1
        if done[0] % 50 == 0:
            print(f"  {done[0]}/{total} requests", file=sys.stderr)

    notes: list[str] = []
    load_before = os.getloadavg()[0]
    figures = selftest.measure(plan, step, announce=notes.append, isolated=not args.normal_priority)
    summaries = {name: fig.summary() for name, fig in figures.items()}
    print(f"Python {platform.python_version()}, {platform.system()} {platform.release()}, "
          f"{os.cpu_count()} CPUs, load average {load_before:.1f} before and {os.getloadavg()[0]:.1f} after; "
          f"{plan.ttft_requests} TTFT requests, {plan.slow_requests}×{plan.slow_tokens} tokens @ 10 ms, "
          f"{plan.fast_requests}×{plan.fast_tokens} tokens @ 0.5 ms per client; {'; '.join(notes)}.\n")
    print(markdown(summaries))
    print()
    for check in selftest.verdict(summaries):
        print(f"- {'pass' if check.passed else 'FAIL'}: {check.label} ({check.detail})")
    print(f"\nFloor: a bare blocking recv() loop on the same 0.5 ms stream costs {bare_recv_floor():.1f} µs CPU "
          f"per chunk here (no HTTP, SSE or JSON work).")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
