"""Stop 42 (h44b) paired harness: each tree's exact `benchpack run` command (bench/sidebyside.py's) against one
reference server with a sidebyside block's settings, trees alternating with the order rotated per round, an
aiohttp loop (bench/peers/loops.py) after each round; CPU and context switches from wait4, TTFT/TPOT p99
errors scored by sidebyside's own `score`. One JSON line per round on stdout.

    python docs/experiments/stop42-harness.py --block 4 --rounds 10 --trees /work/wt/h44b-base,/work/wt/h44b
      [--prefix "valgrind --tool=callgrind ..."]   # wraps each benchpack process (perf, strace, callgrind)
      [--itl 0.2 --ttft 0.4 --requests N]          # slow the server (callgrind: one read per token)
      [--phases]  with WRAP=script, or WRAPS=tree=script,...: run a tree's command through a wrapper script
                  (stop42-phases.py: CPU per phase and per thread; stop42-dataclass-code-cache.py)
      AIOPREFIX="valgrind ..." wraps the aiohttp loop the same way; ENV_TREE=tree limits --env to one tree.
Paths of the trees are worktrees of this repository; ROOT below is the tree whose bench/ and .venv are used."""
import argparse, os, subprocess, sys, json, shutil
from pathlib import Path
ap = argparse.ArgumentParser()
ap.add_argument("--block", type=int, default=4)
ap.add_argument("--rounds", type=int, default=4)
ap.add_argument("--trees", required=True, help="comma-separated worktrees")
ap.add_argument("--prefix", default="")  # e.g. "valgrind --tool=callgrind ..."
ap.add_argument("--no-aiohttp", action="store_true")
ap.add_argument("--itl", type=float, default=None)
ap.add_argument("--ttft", type=float, default=None)
ap.add_argument("--requests", type=int, default=None)
ap.add_argument("--out", default="/dev/shm/h44b-h")
ap.add_argument("--env", default="")
ap.add_argument("--phases", action="store_true")
a = ap.parse_args()
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
import importlib.util
spec = importlib.util.spec_from_file_location("sbs", ROOT / "bench/sidebyside.py")
sbs = importlib.util.module_from_spec(spec); sys.modules["sbs"] = sbs; spec.loader.exec_module(sbs)
from benchpack.refserver.server import RefServer
b = sbs.BLOCKS[a.block - 1]
b = sbs.Block(b.name, b.streams, a.requests or b.requests, b.tokens, a.ttft if a.ttft is not None else b.ttft_s, a.itl if a.itl is not None else b.itl_s)
trees = [t for t in a.trees.split(",") if t]
prefix = a.prefix.split() if a.prefix else []
out = Path(a.out); shutil.rmtree(out, ignore_errors=True); out.mkdir(parents=True)
def envfor(tree):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "VIRTUAL_ENV")}
    env["PYTHONPATH"] = tree; env["NO_COLOR"] = "1"
    for kv in a.env.split(","):
        if kv and (not os.environ.get("ENV_TREE") or tree == os.environ["ENV_TREE"]): k, v = kv.split("=", 1); env[k] = v
    return env
py = str(ROOT / ".venv/bin/python")
def run(argv, env, where, label):
    where.mkdir(parents=True, exist_ok=True)
    with open(where/"stdout.txt","wb") as o, open(where/"stderr.txt","wb") as e:
        p = subprocess.Popen(argv, stdout=o, stderr=e, env=env, cwd=where)
        _, st, ru = os.wait4(p.pid, 0)
    print("RU", label[-12:], ru.ru_minflt, ru.ru_maxrss, round(ru.ru_utime*1e3), round(ru.ru_stime*1e3), file=sys.stderr); return ru.ru_utime + ru.ru_stime, ru.ru_nvcsw, ru.ru_nivcsw, os.waitstatus_to_exitcode(st)
with RefServer(ttft_s=b.ttft_s, itl_s=b.itl_s, default_tokens=b.tokens, timings=False, request_stamps=True, models=["ref"]) as srv:
    # warm-up
    for i, tree in enumerate(trees):
        w = out/f"warm{i}"
        argv = sbs.benchpack_command(sbs.Block(b.name, b.streams, max(2,b.streams), b.tokens, b.ttft_s, b.itl_s), srv.openai_url, w)
        argv[0] = py; srv.reset(); run(argv, envfor(tree), w, "warm")
    for r in range(a.rounds):
        order = trees[r % len(trees):] + trees[:r % len(trees)]
        row = {"round": r, "load": os.getloadavg()[0]}
        for tree in order:
            w = out/f"r{r}-{Path(tree).name}"
            argv = sbs.benchpack_command(b, srv.openai_url, w); argv[0] = py
            if a.phases: argv[1:3] = [os.environ.get("WRAP", str(Path(__file__).with_name("stop42-phases.py")))]
            if os.environ.get("WRAPS"): argv[1:3] = [dict(x.split("=") for x in os.environ["WRAPS"].split(","))[tree]]
            srv.reset()
            cpu, vcs, ivcs, rc = run(prefix + argv, envfor(tree), w, tree)
            f = sbs.Figures(); seen = sbs.benchpack_results(w)
            sbs.score(b, seen, srv.log(), {"cpu_s": cpu, "returncode": rc}, [], f)
            row[Path(tree).name] = dict(cpu_ms=round(cpu*1e3,1), us_chunk=round(cpu/f.chunks*1e6,1) if f.chunks else None, vcs=vcs, ivcs=ivcs, rc=rc,
                ttft99=sbs.pct(f.ttft_err_ms,99), tpot99=sbs.pct(f.tpot_err_pct,99), chunks=f.chunks)
            if a.phases: row[Path(tree).name]["phases"] = [l for l in (w/"stderr.txt").read_text().splitlines() if l.startswith(("PHASES", "THREADS"))]
        if not a.no_aiohttp:
            w = out/f"r{r}-aiohttp"
            argv = sbs.loop_command("aiohttp")(b, srv.openai_url, w); argv[0] = py
            srv.reset(); cpu, vcs, ivcs, rc = run((os.environ.get("AIOPREFIX", "").split() or []) + argv, envfor(str(ROOT)), w, "aio")
            f = sbs.Figures(); seen = sbs.loop_results(w)
            sbs.score(b, seen, srv.log(), {"cpu_s": cpu, "returncode": rc}, [], f)
            row["aiohttp"] = dict(cpu_ms=round(cpu*1e3,1), us_chunk=round(cpu/f.chunks*1e6,1), vcs=vcs, ttft99=sbs.pct(f.ttft_err_ms,99), tpot99=sbs.pct(f.tpot_err_pct,99))
            for t in trees:
                n = Path(t).name
                if row[n]["us_chunk"]: row[n]["ratio"] = round(row[n]["us_chunk"]/row["aiohttp"]["us_chunk"], 3)
        row["load_after"] = os.getloadavg()[0]
        print(json.dumps(row), flush=True)
