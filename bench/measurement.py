"""Measurement-accuracy benchmark: benchpack vs plain httpx and aiohttp loops.

The same comparison as `benchpack selftest`, with more samples, printed as a
Markdown table for docs/measurement.md. All three clients run interleaved
against the reference server in one run, so the comparison holds on a noisy
machine even when the absolute figures move.

    uv run python bench/measurement.py [--requests-scale N]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
from dataclasses import replace

from benchpack import selftest


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

    from benchpack.refserver import RefServer

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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests-scale", type=float, default=1.0, help="multiply the THOROUGH sample counts")
    parser.add_argument("--normal-priority", action="store_true",
                        help="no real-time priority for the latency phases (see selftest.measure)")
    args = parser.parse_args()
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
