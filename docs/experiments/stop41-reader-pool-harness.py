"""Paired harness (h43d, from h43a's): one reference server per block, each arm's exact `benchpack run` command
alternating (order rotated per round), an aiohttp loop after each round; CPU/context switches from wait4,
TTFT/TPOT p99 errors scored by bench/sidebyside.py, and the share of rows whose TTFT is marked "upper"/"lower".
Arms: base = main; pN = branch h43d with BENCHPACK_STREAM_READERS=N (p1 = h43a's single reader)."""
import json, os, subprocess, sys, time
from pathlib import Path
sys.path.insert(0, "/work/wt/h43d-base")
from bench import sidebyside as S
from benchpack.refserver.server import RefServer

BASE, BRANCH = "/work/wt/h43d-base", "/work/wt/h43d"
block = S.BLOCKS[int(sys.argv[1]) - 1]
rounds = int(sys.argv[2])
arms = sys.argv[3].split(",")
work = Path(f"/dev/shm/h43d-pool-{sys.argv[1]}-{os.getpid()}"); work.mkdir()
env = S.environment(work)
tools = {t.name: t for t in S.tools(None, ["aiohttp"])}

def run(argv, root, where, extra=None):
    where.mkdir(parents=True, exist_ok=True)
    arm_env = dict(env, PYTHONPATH=root, **(extra or {}))
    with open(where / "stdout.txt", "wb") as out, open(where / "stderr.txt", "wb") as err:
        p = subprocess.Popen(argv, stdout=out, stderr=err, env=arm_env, cwd=where)
        _, status, u = os.wait4(p.pid, 0)
    return {"cpu_s": u.ru_utime + u.ru_stime, "nvcsw": u.ru_nvcsw, "nivcsw": u.ru_nivcsw, "rc": os.waitstatus_to_exitcode(status)}

def marks(where):
    rows = [json.loads(l) for l in (where / "out" / "run.jsonl").read_text().splitlines()]
    got = [((r.get("timing") or {}).get("placement") or {}).get("ttft") for r in rows]
    return len(rows), got.count("upper"), got.count("lower")

with RefServer(ttft_s=block.ttft_s, itl_s=block.itl_s, default_tokens=block.tokens, timings=False, request_stamps=True, models=["ref"]) as srv:
    for r in range(rounds + 1):  # round 0: warm-up, not reported
        order = arms[r % len(arms):] + arms[:r % len(arms)]
        line = {"round": r, "load": os.getloadavg()[0], "time": time.strftime("%H:%M:%S", time.gmtime())}
        for arm in order:
            where = work / f"r{r}" / arm
            argv = S.benchpack_command(block, srv.openai_url, where)
            root = BASE if arm == "base" else BRANCH
            argv[0] = f"{root}/.venv/bin/python"
            extra = None if arm == "base" else {"BENCHPACK_STREAM_READERS": arm[1:]}
            srv.reset()
            u = run(argv, root, where, extra)
            figures = S.Figures()
            S.score(block, S.benchpack_results(where), srv.log(), {"cpu_s": u["cpu_s"], "returncode": u["rc"]}, [], figures)
            ttft = sorted(figures.ttft_err_ms); tpot = sorted(figures.tpot_err_pct)
            u["ttft_p99"] = S.pct(ttft, 99); u["tpot_p99"] = S.pct(tpot, 99); u["no_tpot"] = figures.no_tpot
            u["chunks"] = figures.chunks
            u["rows"], u["upper"], u["lower"] = marks(where)
            line[arm] = u
        srv.reset()
        where = work / f"r{r}" / "aiohttp"
        tool = tools["aiohttp"]
        u = run(tool.command(block, srv.openai_url, where), BASE, where)
        figures = S.Figures()
        S.score(block, S.loop_results(where), srv.log(), {"cpu_s": u["cpu_s"], "returncode": u["rc"]}, [], figures)
        u["ttft_p99"] = S.pct(sorted(figures.ttft_err_ms), 99); u["tpot_p99"] = S.pct(sorted(figures.tpot_err_pct), 99)
        u["chunks"] = figures.chunks
        line["aiohttp"] = u
        line["load_end"] = os.getloadavg()[0]
        if r:
            print(json.dumps(line), flush=True)
