"""How long the test suite takes: wall time, the slowest 30 tests, and the machine's load beside them.

Runs `uv run pytest <pytest args>` in a checkout (this one, or `--repo DIR` for another commit's
checkout, to measure before/after on the same machine), with a JUnit report, and prints:

- the wall time of the whole command, and the tests passed/failed/skipped/errors;
- the load average (`/proc/loadavg`) before and after, and the number of cores: on a shared machine a
  figure means nothing without them;
- the slowest 30 tests by their JUnit time (setup + call + teardown of each test).

`--rounds N --repo A --repo B` alternates the checkouts round by round (A, B, A, B, …) so both see the
same load, and prints each round and the median per checkout.

    uv run python bench/suite_time.py                                   # the README's test command
    uv run python bench/suite_time.py -- tests/service -p no:cacheprovider
    uv run python bench/suite_time.py --repo /tmp/before --repo . --rounds 2 -- tests/service/api
    uv run python bench/suite_time.py --json var/suite-time.json -- tests/service

Arguments after `--` go to pytest. The report of record is in docs/testing.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SLOWEST = 30


def loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def junit_cases(path: Path) -> list[dict]:
    root = ET.parse(path).getroot()
    cases = []
    for case in root.iter("testcase"):
        outcome = "passed"
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome = {"failure": "failed", "error": "error", "skipped": "skipped"}[child.tag]
        name = f"{case.get('classname', '')}::{case.get('name', '')}"
        cases.append({"test": name, "seconds": float(case.get("time") or 0), "outcome": outcome})
    return cases


def run_once(repo: Path, pytest_args: list[str]) -> dict:
    with tempfile.TemporaryDirectory(prefix="suite-time-") as tmp:
        report = Path(tmp) / "junit.xml"
        argv = ["uv", "run", "pytest", f"--junitxml={report}", *pytest_args]
        before = loadavg()
        started = time.monotonic()
        proc = subprocess.run(argv, cwd=repo, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        wall = time.monotonic() - started
        after = loadavg()
        cases = junit_cases(report) if report.exists() else []
    counts: dict[str, int] = {}
    for case in cases:
        counts[case["outcome"]] = counts.get(case["outcome"], 0) + 1
    return {
        "repo": str(repo), "argv": argv[2:], "exit_code": proc.returncode, "wall_s": round(wall, 1),
        "load_before": before, "load_after": after, "cores": len(os.sched_getaffinity(0)), "counts": counts,
        "test_seconds_sum": round(sum(c["seconds"] for c in cases), 1),
        "slowest": sorted(cases, key=lambda c: -c["seconds"])[:SLOWEST],
        "tail": proc.stdout[-3000:] if proc.returncode not in (0, 1) or not cases else "",
    }


def show(result: dict) -> None:
    print(f"\n{result['repo']}: uv run {' '.join(result['argv'])}")
    print(f"  wall {result['wall_s']:.1f} s  ·  exit {result['exit_code']}  ·  {result['counts']}  ·  "
          f"sum of test times {result['test_seconds_sum']:.1f} s")
    print(f"  load average before {result['load_before']}, after {result['load_after']} ({result['cores']} cores)")
    print(f"  slowest {len(result['slowest'])}:")
    for case in result["slowest"]:
        print(f"    {case['seconds']:8.2f} s  {case['test']}" + ("" if case["outcome"] == "passed"
                                                                   else f"  [{case['outcome']}]"))
    if result["tail"]:
        print("  pytest's output ended with:\n" + result["tail"])


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if "--" in argv:
        split = argv.index("--")
        ours, pytest_args = argv[:split], argv[split + 1:]
    else:
        ours, pytest_args = argv, []
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", action="append", type=Path,
                        help="checkout to run in (repeat to alternate several); default: this one")
    parser.add_argument("--rounds", type=int, default=1, help="rounds over the checkouts, alternating")
    parser.add_argument("--json", type=Path, help="also write every round's figures here")
    args = parser.parse_args(ours)
    repos = [repo.resolve() for repo in (args.repo or [ROOT])]
    results = []
    for number in range(args.rounds):
        for repo in repos:
            result = run_once(repo, pytest_args)
            result["round"] = number + 1
            results.append(result)
            show(result)
    if args.rounds > 1 or len(repos) > 1:
        print("\nmedian wall time per checkout:")
        for repo in repos:
            walls = [r["wall_s"] for r in results if r["repo"] == str(repo)]
            print(f"  {statistics.median(walls):8.1f} s  {repo}  (rounds: {', '.join(f'{w:.1f}' for w in walls)})")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 0 if all(r["exit_code"] == 0 for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
