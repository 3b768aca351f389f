"""Run queue latency: one queued run end to end, beside the same run done directly.

Starts the README's embedded registry (`manage.py demo --no-seed`: SQLite,
the filesystem broker, the validation worker, the local runner host's worker
and the scripted endpoint) in a temporary directory, then queues the pack N
times through the API, one after another, and splits each into the steps a
user watches, from the server's own event times:

- queue wait:  request created → claimed by the runner worker (`running`);
- run:         the core runner, as the worker timed it;
- bundle:      bundle + archive, as the worker timed it;
- file:        worker finished → submission `received` (the rest of the task);
- validation:  submission `received` → `quarantined` (the validation worker);
- total:       request created → submission `quarantined`;

and what the runs measured (TTFT, decode speed), queued vs direct: the
worker's progress writes and its watcher thread must not move them.

The baseline is the same pack run directly with `benchpack.run.runner.run_pack`
in this process against an identical scripted endpoint, interleaved with the
queued runs, so the queue's overhead is what is left.

    uv run python bench/runqueue_latency.py [--runs 5] [--pack runtime-sweep] [--port 8133]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _when(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def _wait(predicate, timeout_s: float, what: str):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = predicate()
        if found:
            return found
        time.sleep(0.1)
    raise SystemExit(f"{what} did not happen within {timeout_s:.0f} s")


def queued_once(api: httpx.Client, pack: str) -> dict:
    created = api.post("/api/v1/run-requests/", json={"host": "local", "endpoint": "refserver",
                                                      "model": "scripted-demo", "pack": pack})
    created.raise_for_status()
    request_id = created.json()["id"]

    def settled():
        body = api.get(f"/api/v1/run-requests/{request_id}/").json()
        if body["state"] in ("failed", "cancelled"):
            raise SystemExit(f"run request {request_id} {body['state']}: {body['failure_reason']}")
        if body["submission"] and body["submission"]["state"] in ("quarantined", "invalid"):
            return body
        return None

    body = _wait(settled, 600, f"run request {request_id}")
    ok = [row for row in body["rows"] if row["ok"]]
    submission = api.get(f"/api/v1/submissions/{body['submission']['id']}/").json()
    events = {e["to_state"]: _when(e["created_at"]) for e in body["events"]}
    sub_events = {e["to_state"]: _when(e["created_at"]) for e in submission["events"]}
    created_at = _when(body["created_at"])
    return {
        "queue wait": events["running"] - created_at,
        "run": body["timings"]["run_s"],
        "bundle": body["timings"]["bundle_s"],
        "file": sub_events["received"] - (events["running"] + body["timings"]["run_s"] + body["timings"]["bundle_s"]),
        "validation": sub_events["quarantined"] - sub_events["received"],
        "total": sub_events["quarantined"] - created_at,
    }, {"ttft_s": statistics.median(r["ttft_s"] for r in ok), "decode_tps": statistics.median(r["decode_tps"] for r in ok)}


def direct_once(pack: str, workdir: Path, index: int) -> tuple[float, dict]:
    from benchpack.packs.loader import load_pack, resolve_pack_path
    from benchpack.refserver.server import RefServer
    from benchpack.run.runner import RunOptions, run_pack
    from registry_site.demo_data import DEMO_REPLY, DEMO_TIMING

    with RefServer(responses=[DEMO_REPLY], **DEMO_TIMING) as ref:
        started = time.perf_counter()
        outcome = run_pack(load_pack(resolve_pack_path(pack)),
                           RunOptions(adapter="openai-chat", model="scripted-demo", endpoint=ref.url + "/v1",
                                      out=workdir / f"direct-{index}"))
        wall = time.perf_counter() - started
    ok = [row["timing"] for row in outcome.rows if row["ok"]]
    return wall, {"ttft_s": statistics.median(t["ttft_s"] for t in ok),
                  "decode_tps": statistics.median(t["decode_tps"] for t in ok)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--pack", default="runtime-sweep")
    parser.add_argument("--port", type=int, default=8133)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="benchpack-runqueue-bench-") as tmp:
        env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "CELERY_BROKER_URL", "DJANGO_SETTINGS_MODULE"}}
        env.update({"BENCHPACK_VAR_DIR": str(Path(tmp) / "var"), "BENCHPACK_ENV": "local"})
        demo = subprocess.Popen([sys.executable, "manage.py", "demo", "--no-seed", "--port", str(args.port)],
                                cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            url = f"http://127.0.0.1:{args.port}"
            _wait(lambda: _answers(url), 120, "the demo registry")
            token = subprocess.run(
                [sys.executable, "manage.py", "shell", "-c",
                 "from accounts.models import ApiToken; from django.contrib.auth import get_user_model;"
                 "print(ApiToken.issue(get_user_model().objects.get(email='operator@benchpack.local'), 'bench')[1])"],
                cwd=ROOT, env=env, capture_output=True, text=True, check=True).stdout.split()[-1]
            with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=30) as api:
                _wait(lambda: any(h["online"] for h in api.get("/api/v1/runner-hosts/").json()), 120, "the runner worker")
                queued, direct, measured = [], [], {"queued": [], "direct": []}
                for index in range(args.runs):
                    steps, figures = queued_once(api, args.pack)
                    queued.append(steps)
                    measured["queued"].append(figures)
                    wall, figures = direct_once(args.pack, Path(tmp), index)
                    direct.append(wall)
                    measured["direct"].append(figures)
        finally:
            demo.terminate()
            demo.wait(timeout=60)

    print(f"{args.runs} runs of {args.pack}, one after another; {platform.platform()}, {os.cpu_count()} CPUs\n")
    print("| step | median s | min s | max s |\n|---|---|---|---|")
    for step in queued[0]:
        values = [q[step] for q in queued]
        print(f"| {step} | {statistics.median(values):.3f} | {min(values):.3f} | {max(values):.3f} |")
    print(f"| baseline: run_pack directly | {statistics.median(direct):.3f} | {min(direct):.3f} | {max(direct):.3f} |")
    print("\nWhat the runs measured (median over runs of each run's median over ok rows): the queue must not move it.\n")
    print("| figure | queued | direct |\n|---|---|---|")
    for figure in ("ttft_s", "decode_tps"):
        cells = [statistics.median(m[figure] for m in measured[way]) for way in ("queued", "direct")]
        print(f"| {figure} | {cells[0]:.4f} | {cells[1]:.4f} |")
    return 0


def _answers(url: str) -> bool:
    try:
        return httpx.get(url + "/", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


if __name__ == "__main__":
    raise SystemExit(main())
