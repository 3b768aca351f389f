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
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
