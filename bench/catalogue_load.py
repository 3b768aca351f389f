"""Leaderboard, answer, runs-list, compare and timeline latency under load, against a trivial JSON view in the same run.

    uv run python manage.py seed_catalogue --cases 1000000      # once, into the database below
    DATABASE_URL=sqlite:////path/to/registry.sqlite3 uv run python bench/catalogue_load.py [--duration 60]
    DATABASE_URL=postgres://user@127.0.0.1:5432/db uv run python bench/catalogue_load.py --only leaderboard \
        --only answer --only runs

Method (docs/leaderboards.md, "Scale" and "10M case rows on PostgreSQL"): granian serves the WSGI app as
the production unit does (`--workers 2`, DEBUG off) on 127.0.0.1; `wrk` (one
client process, 2 threads, 16 connections, loopback only, a fixed duration)
drives one target at a time: the trivial JSON view `/healthz/` first, then
each catalogue target, each a rotating list of real URLs (several boards,
orders, filters and pages; answer questions over packs, speeds, pass rates
and hardware classes; run lists filtered by pack, model, runtime, hardware
class and date, and paged; compare sets of 2–4 runs; timelines of several
model + hardware series) taken from the seeded database. A Lua hook reports
p50/p95/p99 and requests/s per target; the trivial view is measured again
at the end and the better of its two runs is the baseline. Pass (issue 34
item 4): leaderboard page and API, answer API and runs API p99 <= 150 ms and
>= 50 % of the trivial view's requests/s; compare and timeline p95 <= 100 ms.
The API's anonymous throttle keeps its deployed rate: each
request comes from its own client address (X-Forwarded-For, granian with
NUM_PROXIES=1 as behind Traefik), so every request still pays the throttle's
Redis round trips but no address is throttled.

Not part of the test suite. Needs `wrk` (Debian package `wrk`).
"""

from __future__ import annotations

import argparse
import datetime
import json
import logging
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from urllib.parse import quote, urlencode

import httpx

logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per checked URL otherwise

ROOT = Path(__file__).resolve().parent.parent
LUA = r"""
local paths = {}
for line in io.lines("%(paths)s") do paths[#paths + 1] = line end
local counter = 0
request = function()
  counter = counter + 1
  -- one client address per request (granian runs with NUM_PROXIES=1, as behind Traefik): each
  -- address's throttle history stays as short as a real visitor's, at the deployed rates
  local address = string.format("10.%%d.%%d.%%d", math.floor(counter / 65536) %% 256,
                                math.floor(counter / 256) %% 256, counter %% 256)
  return wrk.format("GET", paths[(counter %% #paths) + 1], {["X-Forwarded-For"] = address})
end
done = function(summary, latency, requests)
  local errors = summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout
  io.write(string.format("RESULT {\"requests\": %%d, \"duration_us\": %%d, \"non2xx\": %%d, \"errors\": %%d, " ..
    "\"p50_ms\": %%.3f, \"p95_ms\": %%.3f, \"p99_ms\": %%.3f, \"max_ms\": %%.3f}\n",
    summary.requests, summary.duration, summary.errors.status, errors,
    latency:percentile(50) / 1000, latency:percentile(95) / 1000, latency:percentile(99) / 1000, latency.max / 1000))
end
"""


@dataclass
class Target:
    name: str
    paths: list[str]
    p95_limit_ms: float | None
    min_ratio: float | None = None  # of the trivial view's requests/s
    p99_limit_ms: float | None = None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def discover(limit: int = 16, seed: int = 3) -> list[Target]:
    """Real URLs from the seeded database (read through the same query functions the views use)."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "registry_site.settings")
    import django

    django.setup()
    from registry_site.catalogue import leaderboard as lb
    from registry_site.catalogue.models import LeaderboardEntry, PublishedCase, PublishedRun

    rng = random.Random(seed)
    boards = sorted(lb.boards(), key=lambda b: -b["systems"])[:8]
    variants = [{}, {"order": "ttft_s"}, {"order": "-decode_rate"}, {"page": "2"}, {"runtime": "llama.cpp"},
                {"accelerator": "4090"}, {"quantization": "Q4_K_M", "order": "wall_s"}, {"order": "pass_rate"}]
    page_paths, api_paths = [], []
    for board in boards:
        suffix = f"{quote(board['pack_id'])}/" + (f"{quote(board['case'])}/" if board["case"] else "")
        for variant in variants:
            query = ("?" + urlencode(variant)) if variant else ""
            page_paths.append(f"/leaderboards/{suffix}{query}")
            api_paths.append(f"/api/v1/leaderboards/{suffix}{query}")
    rng.shuffle(page_paths)
    rng.shuffle(api_paths)
    # Compare: 2–4 runs of one pack from different systems (what a user picks off a board).
    compare_pages, compare_api = [], []
    for board in boards:
        entries = list(LeaderboardEntry.objects.filter(pack_id=board["pack_id"], case=board["case"])
                       .values_list("representative_run_id", flat=True)[:200])
        for _ in range(limit // len(boards) + 1):
            ids = ",".join(str(i) for i in rng.sample(entries, min(len(entries), rng.randint(2, 4))))
            compare_pages.append(f"/compare/?runs={ids}")
            compare_api.append(f"/api/v1/compare/?runs={ids}")
    # Timelines: a fixed model + hardware class + workload, across runtime versions.
    timeline_pages, timeline_api = [], []
    series = (LeaderboardEntry.objects.exclude(case="").values("workload_key", "pack_id", "case", "model",
                                                                "hardware_class").distinct()[:2000])
    for row in rng.sample(list(series), min(limit, len(series))):
        timeline_pages.append("/timelines/?" + urlencode({"workload": row["workload_key"], "model": row["model"],
                                                          "hardware_class": row["hardware_class"]}))
        timeline_api.append("/api/v1/timelines/?" + urlencode({"workload": row["workload_key"], "model": row["model"],
                                                               "hardware_class": row["hardware_class"]}))
    answer_paths = answer_questions(rng)
    run_paths = run_lists(rng)
    print(f"catalogue: {PublishedRun.objects.count():,} runs, {PublishedCase.objects.count():,} case rows, "
          f"{LeaderboardEntry.objects.count():,} leaderboard rows")
    return [
        Target("trivial JSON view /healthz/", ["/healthz/"], None),
        Target("leaderboard page", page_paths, None, 0.5, P99_LIMIT_MS),
        Target("leaderboard API", api_paths, None, 0.5, P99_LIMIT_MS),
        Target("answer API", answer_paths, None, 0.5, P99_LIMIT_MS),
        Target("runs API", run_paths, None, 0.5, P99_LIMIT_MS),
        Target("compare page", compare_pages, 100),
        Target("compare API", compare_api, 100),
        Target("timeline page", timeline_pages, 100),
        Target("timeline API", timeline_api, 100),
    ]


P99_LIMIT_MS = 150


def answer_questions(rng: random.Random, count: int = 48) -> list[str]:
    """`/api/v1/answer/` questions a visitor asks: a pack (or "coding"), speeds, a pass rate, a machine."""
    from registry_site.catalogue import answer
    from registry_site.catalogue.models import LeaderboardEntry

    works = answer.work_choices()
    classes = sorted(set(LeaderboardEntry.objects.filter(case="").exclude(hardware_class="").order_by()
                         .values_list("hardware_class", flat=True)))
    paths = []
    for _ in range(count):
        question = {"work": rng.choice(works)}
        if rng.random() < 0.7:
            question["min_decode"] = rng.choice(["5", "20", "50", "120", "400"])
        if rng.random() < 0.5:
            question["max_ttft"] = rng.choice(["0.2", "0.5", "2"])
        if rng.random() < 0.4:
            question["min_pass"] = rng.choice(["30", "50", "80"])
        if classes and rng.random() < 0.4:
            question["hardware_class"] = rng.choice(classes)
        if rng.random() < 0.2:
            question["max_memory_gb"] = rng.choice(["32", "64", "128"])
        paths.append("/api/v1/answer/?" + urlencode(question))
    return paths


def run_lists(rng: random.Random, count: int = 48) -> list[str]:
    """`/api/v1/runs/` as an integrator pages it: filtered by pack, model, runtime, hardware class, dates."""
    from registry_site.catalogue.models import LeaderboardEntry, PublishedRun

    systems = list(LeaderboardEntry.objects.filter(case="").order_by("pk")
                   .values("pack_id", "model", "runtime_name", "runtime_version", "hardware_class")[:500])
    newest = PublishedRun.objects.order_by("-pk").values_list("published_at", flat=True).first()
    paths = []
    for _ in range(count):
        row = rng.choice(systems)
        query = {}
        shape = rng.randrange(6)
        if shape == 0:
            query = {"pack": row["pack_id"]}
        elif shape == 1:
            query = {"pack": row["pack_id"], "model": row["model"]}
        elif shape == 2:
            query = {"hardware_class": row["hardware_class"], "runtime": f"{row['runtime_name']} {row['runtime_version']}"}
        elif shape == 3 and newest:
            query = {"pack": row["pack_id"], "since": (newest - datetime.timedelta(days=7)).date().isoformat()}
        elif shape == 4:
            query = {"model": row["model"], "order": "-published", "page": str(rng.randint(1, 3))}
        if rng.random() < 0.3:
            query["page_size"] = "20"
        paths.append("/api/v1/runs/" + (("?" + urlencode(query)) if query else ""))
    return paths


def start_server(port: int, workers: int, cache: bool, cache_url: str, conn_max_age: int) -> subprocess.Popen:
    env = {**os.environ, "BENCHPACK_ENV": "local", "DEBUG": "false", "NUM_PROXIES": "1",
           "CATALOGUE_RESPONSE_CACHE": "true" if cache else "false", "DATABASE_CONN_MAX_AGE": str(conn_max_age)}
    if cache_url:
        env["CACHE_URL"] = cache_url
    server = subprocess.Popen(
        [sys.executable, "-m", "granian", "--interface", "wsgi", "--host", "127.0.0.1", "--port", str(port),
         "--workers", str(workers), "--workers-kill-timeout", "10", "registry_site.wsgi:application"],
        cwd=ROOT, env=env, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz/", timeout=2).status_code == 200:
                return server
        except httpx.HTTPError:
            time.sleep(0.3)
    stop(server)
    raise SystemExit("granian did not answer /healthz/ within 60 s")


def stop(server: subprocess.Popen) -> None:
    if server.poll() is None:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()


# Answers that say the catalogue holds no such page or value: a small catalogue (the demo's) has no second
# page of a board and no llama.cpp or 4090 rows for the synthetic catalogue's filter variants.
NOT_IN_THIS_CATALOGUE = (400, 404)


def check_urls(port: int, targets: list[Target], passes: int) -> None:
    """Every URL answers 200 before it is measured (a fast 404 would flatter the numbers). A URL that
    answers 400 or 404 on the first pass asks for something this catalogue does not hold: it is left out,
    and said; any other answer, or a target left with no URL, stops the bench. With the response cache
    on, `passes` rounds over every URL also fill each worker's cache (steady state)."""
    # A new connection per request, so that every granian worker gets its share; a client address per
    # request, as in the measurement, so the deployed throttle rates hold.
    addresses = (f"192.168.{n // 256 % 256}.{n % 256}" for n in range(1, 10**9))
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=120, headers={"Connection": "close"}) as client:
        # No Accept header, as wrk sends none: the response cache keys on Accept, and httpx's "*/*" warmed other keys.
        client.headers.pop("Accept", None)
        for target in targets:
            for round_number in range(passes):
                answers = [(p, client.get(p, headers={"X-Forwarded-For": next(addresses)}).status_code)
                           for p in target.paths]
                absent = [(p, status) for p, status in answers if status in NOT_IN_THIS_CATALOGUE]
                if round_number == 0 and absent:
                    target.paths = [p for p, status in answers if status == 200]
                    print(f"{target.name}: {len(absent)} of {len(answers)} URLs left out (not in this catalogue), "
                          f"e.g. {absent[:2]}")
                    answers = [(p, status) for p, status in answers if status not in NOT_IN_THIS_CATALOGUE]
                bad = [(p, status) for p, status in answers if status != 200]
                if bad or not target.paths:
                    raise SystemExit(f"{target.name}: {len(bad)} URLs do not answer 200, e.g. {bad[:3]}"
                                     if bad else f"{target.name}: no URL of it answers 200 in this catalogue")


def measure(port: int, target: Target, duration: int, connections: int, threads: int, work: Path) -> dict:
    paths = work / f"paths-{abs(hash(target.name))}.txt"
    paths.write_text("\n".join(target.paths) + "\n")
    script = work / "rotate.lua"
    script.write_text(LUA % {"paths": paths})
    out = subprocess.run(["wrk", "-t", str(threads), "-c", str(connections), "-d", f"{duration}s", "--timeout", "10s",
                          "-s", str(script), f"http://127.0.0.1:{port}"],
                         capture_output=True, text=True, check=True).stdout
    result = json.loads(next(line for line in out.splitlines() if line.startswith("RESULT "))[7:])
    result["rps"] = result["requests"] / (result["duration_us"] / 1e6)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=int, default=60, help="seconds per target (default 60)")
    parser.add_argument("--connections", type=int, default=16, help="concurrent clients (default 16)")
    parser.add_argument("--threads", type=int, default=2, help="wrk threads (default 2)")
    parser.add_argument("--workers", type=int, default=2, help="granian workers (default 2, as deployed)")
    parser.add_argument("--only", action="append", help="measure only targets whose name contains this")
    parser.add_argument("--conn-max-age", type=int, default=60,
                        help="DATABASE_CONN_MAX_AGE (default 60: reuse the SQLite connection; 0 opens one per request)")
    parser.add_argument("--no-cache", action="store_true",
                        help="CATALOGUE_RESPONSE_CACHE=false: every request renders (the cold path)")
    parser.add_argument("--cache-url", default=f"redis://127.0.0.1:6379/{13 + int(os.environ.get('BENCHPACK_TEST_REDIS_DB_OFFSET', '0'))}",
                        help="CACHE_URL for throttles, as deployed (deploy/benchpack.env.example); '' = database cache")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args(argv)
    if shutil.which("wrk") is None:
        raise SystemExit("needs wrk (apt-get install wrk)")
    sys.path.insert(0, str(ROOT))
    targets = discover()
    if args.only:
        targets = [t for t in targets if t.name.startswith("trivial") or any(o in t.name for o in args.only)]
    port = _free_port()
    server = start_server(port, args.workers, not args.no_cache, args.cache_url, args.conn_max_age)
    results = []
    print(f"granian --workers {args.workers}; DATABASE_CONN_MAX_AGE={args.conn_max_age}; "
          f"response cache {'off' if args.no_cache else 'on'}; "
          f"throttle cache {args.cache_url or 'database'}; wrk -t{args.threads} -c{args.connections} -d{args.duration}s")
    try:
        check_urls(port, targets, 1 if args.no_cache else 2 * args.workers + 2)
        with tempfile.TemporaryDirectory(prefix="catalogue-load-") as tmp:
            # The trivial view is measured again, last: the baseline is the better of its two runs, so a
            # slow minute at the start cannot flatter the ratios.
            again = [replace(targets[0], name=targets[0].name + " (again)")] if len(targets) > 1 else []
            for target in targets + again:
                measure(port, target, min(5, args.duration), args.connections, args.threads, Path(tmp))  # warm-up
                result = measure(port, target, args.duration, args.connections, args.threads, Path(tmp))
                result["load_average_1m"] = os.getloadavg()[0]  # other work on the machine skews every figure
                results.append((target, result))
                print(f"{target.name:28} {result['rps']:8.1f} req/s  p50 {result['p50_ms']:6.1f} ms  "
                      f"p95 {result['p95_ms']:6.1f} ms  p99 {result['p99_ms']:6.1f} ms  "
                      f"non-2xx {result['non2xx']}  errors {result['errors']}  load {result['load_average_1m']:.1f}", flush=True)
    finally:
        stop(server)
    baseline = max(result["rps"] for target, result in results if target.name.startswith("trivial"))
    failed = False
    print(f"\n{'target':28} {'req/s':>8} {'ratio':>6} {'p95 ms':>7} {'p99 ms':>7} {'limits':>12}  verdict")
    for target, result in results:
        ratio = result["rps"] / baseline
        ok = result["requests"] > 0 and result["non2xx"] == 0 and result["errors"] == 0
        if target.p95_limit_ms is not None:
            ok = ok and result["p95_ms"] <= target.p95_limit_ms
        if target.p99_limit_ms is not None:
            ok = ok and result["p99_ms"] <= target.p99_limit_ms
        if target.min_ratio is not None:
            ok = ok and ratio >= target.min_ratio
        failed |= not ok
        limits = " ".join(text for text in (
            f"p95<={target.p95_limit_ms:.0f}" if target.p95_limit_ms is not None else "",
            f"p99<={target.p99_limit_ms:.0f}" if target.p99_limit_ms is not None else "",
            f"x>={target.min_ratio:.2f}" if target.min_ratio is not None else "") if text)
        print(f"{target.name:28} {result['rps']:8.1f} {ratio:6.2f} {result['p95_ms']:7.1f} {result['p99_ms']:7.1f} "
              f"{limits:>12}  {'pass' if ok else 'FAIL'}")
    if args.json:
        args.json.write_text(json.dumps({"cache": not args.no_cache, "workers": args.workers,
                                         "connections": args.connections, "duration_s": args.duration,
                                         "results": [{"target": t.name, **r, "ratio": r["rps"] / baseline}
                                                     for t, r in results]}, indent=2))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
