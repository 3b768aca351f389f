"""How long the test suite takes: wall time, the slowest 30 tests, and the machine's load beside them.

Runs `uv run pytest <pytest args>` in a checkout (this one, or `--repo DIR` for another commit's
checkout, to measure before/after on the same machine), with a JUnit report, and prints:

- the wall time of the whole command, and the tests passed/failed/skipped/errors;
- the load average (`/proc/loadavg`) before and after, and the number of cores: on a shared machine a
  figure means nothing without them;
- the slowest 30 tests by their JUnit time (setup + call + teardown of each test);
- the CPU the run's processes used (user + system, every reaped descendant) and how busy the machine's cores
  were meanwhile (/proc/stat): a suite that keeps every core busy gains nothing from another worker;
- each xdist worker's timeline (tests/conftest.py writes it when BENCHPACK_TEST_TIMELINE is set): when it
  started its first test, when it finished its last, how long it ran tests, and its last tests — what
  bounds the wall time at the end.

`--rounds N --repo A --repo B` alternates the checkouts round by round (A, B, A, B, …) so both see the
same load, and prints each round and the median per checkout.

    uv run python bench/suite_time.py                                   # the README's test command
    uv run python bench/suite_time.py -- tests/service -p no:cacheprovider
    uv run python bench/suite_time.py --repo /tmp/before --repo . --rounds 2 -- tests/service/api
    uv run python bench/suite_time.py --json var/suite-time.json -- tests/service
    uv run python bench/suite_time.py --record-durations tests/durations.json   # the order of tests/scheduling.py

Arguments after `--` go to pytest. The report of record is in docs/testing.md.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
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


def cpu_ticks() -> tuple[int, int]:
    """(busy, total) jiffies of all cores since boot."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return sum(fields) - idle, sum(fields)


class CpuSampler(threading.Thread):
    """The machine's busy share of its cores, every `every` seconds, while the suite runs."""

    def __init__(self, every: float = 5.0):
        super().__init__(daemon=True)
        self.every, self.samples, self.stopped = every, [], threading.Event()

    def run(self) -> None:
        last = cpu_ticks()
        while not self.stopped.wait(self.every):
            now = cpu_ticks()
            self.samples.append((now[0] - last[0]) / max(1, now[1] - last[1]))
            last = now


def worker_timelines(path: Path, started: float) -> dict:
    """Per worker: its first test's start and last test's end (seconds after the command started), the
    seconds it spent in tests, the gaps between them, and its last five tests."""
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []
    out: dict[str, dict] = {}
    for worker in sorted({entry["worker"] for entry in lines}):
        tests = sorted((e for e in lines if e["worker"] == worker and e["event"] == "test"), key=lambda e: e["start"])
        sessions = [e["at"] for e in lines if e["worker"] == worker and e["event"] == "sessionstart"]
        if not tests:
            continue
        busy = sum(e["end"] - e["start"] for e in tests)
        out[worker] = {
            "session_start_s": round(min(sessions) - started, 1) if sessions else None,
            "first_test_s": round(tests[0]["start"] - started, 1),
            "last_end_s": round(tests[-1]["end"] - started, 1),
            "tests": len(tests), "busy_s": round(busy, 1),
            "cpu_s": round(sum(e.get("cpu", 0) for e in tests), 1),  # the worker's and its reaped children's
            "last": [{"test": e["test"], "start_s": round(e["start"] - started, 1),
                      "seconds": round(e["end"] - e["start"], 1)} for e in tests[-5:]],
        }
    return out


def record_durations(timeline: Path, dest: Path, at_least_s: float = 1.0) -> int:
    """tests/durations.json for tests/scheduling.py: each test's seconds (node id without its "@group"), the
    tests of `at_least_s` or more. Not a worker's first test: it carries the worker's start (the test
    database's migrations)."""
    sys.path.insert(0, str(ROOT))
    from tests.scheduling import base_id

    lines = [json.loads(line) for line in timeline.read_text().splitlines() if line.strip()]
    firsts = {}
    for entry in sorted((e for e in lines if e["event"] == "test"), key=lambda e: e["start"]):
        firsts.setdefault(entry["worker"], entry["test"])
    seconds = {base_id(e["test"]): round(e["end"] - e["start"], 1) for e in lines
               if e["event"] == "test" and e["test"] not in firsts.values() and e["end"] - e["start"] >= at_least_s}
    dest.write_text(json.dumps(dict(sorted(seconds.items())), indent=0) + "\n")
    return len(seconds)


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


def run_once(repo: Path, pytest_args: list[str], keep: Path | None = None, durations: Path | None = None) -> dict:
    with tempfile.TemporaryDirectory(prefix="suite-time-") as tmp:
        report = Path(tmp) / "junit.xml"
        timeline = Path(tmp) / "timeline.jsonl"
        argv = ["uv", "run", "pytest", f"--junitxml={report}", *pytest_args]
        env = {**os.environ, "BENCHPACK_TEST_TIMELINE": str(timeline)}
        before = loadavg()
        sampler = CpuSampler()
        cpu_before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started_at, started = time.time(), time.monotonic()
        sampler.start()
        proc = subprocess.run(argv, cwd=repo, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        wall = time.monotonic() - started
        sampler.stopped.set()
        cpu_after = resource.getrusage(resource.RUSAGE_CHILDREN)
        after = loadavg()
        cases = junit_cases(report) if report.exists() else []
        timelines = worker_timelines(timeline, started_at)
        if durations and timeline.exists():
            print(f"{durations}: {record_durations(timeline, durations)} tests of a second or more")
        if keep:
            keep.mkdir(parents=True, exist_ok=True)
            for made in (report, timeline):
                if made.exists():
                    shutil.copy(made, keep / made.name)
            (keep / "output.txt").write_text(proc.stdout)
    counts: dict[str, int] = {}
    for case in cases:
        counts[case["outcome"]] = counts.get(case["outcome"], 0) + 1
    return {
        "repo": str(repo), "argv": argv[2:], "exit_code": proc.returncode, "wall_s": round(wall, 1),
        "load_before": before, "load_after": after, "cores": len(os.sched_getaffinity(0)), "counts": counts,
        "test_seconds_sum": round(sum(c["seconds"] for c in cases), 1),
        "cpu_s": round(cpu_after.ru_utime + cpu_after.ru_stime - cpu_before.ru_utime - cpu_before.ru_stime, 1),
        "machine_busy": round(statistics.mean(sampler.samples), 3) if sampler.samples else None,
        "workers": timelines,
        "slowest": sorted(cases, key=lambda c: -c["seconds"])[:SLOWEST],
        "tail": proc.stdout[-3000:] if proc.returncode not in (0, 1) or not cases else "",
    }


def show(result: dict) -> None:
    print(f"\n{result['repo']}: uv run {' '.join(result['argv'])}")
    print(f"  wall {result['wall_s']:.1f} s  ·  exit {result['exit_code']}  ·  {result['counts']}  ·  "
          f"sum of test times {result['test_seconds_sum']:.1f} s")
    print(f"  load average before {result['load_before']}, after {result['load_after']} ({result['cores']} cores)")
    busy = result["machine_busy"]
    print(f"  CPU of the run's processes {result['cpu_s']:.0f} s ({result['cpu_s'] / max(result['wall_s'], 1):.2f} cores "
          f"on average); the machine's cores busy {'?' if busy is None else f'{busy:.0%}'} (every process on it)")
    for worker, line in result["workers"].items():
        print(f"  {worker}: session start {line['session_start_s']} s, first test {line['first_test_s']} s, "
              f"last test ended {line['last_end_s']} s; {line['tests']} tests, {line['busy_s']:.0f} s in tests "
              f"({line['cpu_s']:.0f} s CPU); last:")
        for last in line["last"]:
            print(f"      at {last['start_s']:7.1f} s  {last['seconds']:7.1f} s  {last['test']}")
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
    parser.add_argument("--record-durations", type=Path, metavar="JSON",
                        help="write each test's seconds here (tests/durations.json, read by tests/scheduling.py)")
    parser.add_argument("--keep", type=Path,
                        help="keep each run's JUnit report, timeline and output in DIR/<round>-<checkout>/")
    args = parser.parse_args(ours)
    repos = [repo.resolve() for repo in (args.repo or [ROOT])]
    results = []
    for number in range(args.rounds):
        for repo in repos:
            keep = args.keep / f"{number + 1}-{repo.name}" if args.keep else None
            result = run_once(repo, pytest_args, keep, args.record_durations)
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
