"""How long `benchpack --help` and `benchpack list` take, against a bare `python -c pass`.

Each command is started as a fresh process (the way a user types it),
interleaved round by round with the baseline on the same machine, so a busy
neighbour slows all of them alike. Reports the median wall time of each, and
the time above the bare interpreter. The target (docs/cli-startup.md) is
<= 0.15 s for `--help` and `list`; the script exits 1 when a median is above
it, so it can be run as a check.

    uv run python bench/cli_startup.py [--rounds 15] [--limit 0.15]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import time

COMMANDS = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "benchpack --help": [sys.executable, "-m", "benchpack", "--help"],
    "benchpack list": [sys.executable, "-m", "benchpack", "list"],
    "benchpack run --help": [sys.executable, "-m", "benchpack", "run", "--help"],
}
TARGETS = ("benchpack --help", "benchpack list")


# As installed: with byte-code caches (an environment that sets PYTHONDONTWRITEBYTECODE would
# otherwise time the compiler, not the start-up).
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def time_once(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, env=ENV)
    return time.perf_counter() - start


def measure(rounds: int) -> dict[str, list[float]]:
    for argv in COMMANDS.values():  # warm the file cache and .pyc files first
        time_once(argv)
    samples: dict[str, list[float]] = {name: [] for name in COMMANDS}
    for _ in range(rounds):
        for name, argv in COMMANDS.items():
            samples[name].append(time_once(argv))
    return samples


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--limit", type=float, default=0.15, help="seconds allowed for --help and list")
    args = parser.parse_args()
    samples = measure(args.rounds)
    base = statistics.median(samples["python -c pass"])
    print(f"{platform.python_implementation()} {platform.python_version()} on {platform.machine()}, "
          f"{os.cpu_count()} CPUs, {args.rounds} rounds, median wall time:")
    failed = False
    for name, values in samples.items():
        median = statistics.median(values)
        over = "" if name == "python -c pass" else f"  (+{median - base:.3f} s over python -c pass)"
        verdict = ""
        if name in TARGETS:
            ok = median <= args.limit
            failed |= not ok
            verdict = f"  {'ok' if ok else 'OVER'} (limit {args.limit:.2f} s)"
        print(f"  {name:<22} {median:.3f} s{over}{verdict}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
