"""Side by side: benchpack against the tools people compare it with, each a whole process, on one scripted server.

    uv run python bench/sidebyside.py [--rounds 2] [--peers-venv DIR] [--tools benchpack,aiohttp,...]

Every tool runs as its own process at normal priority (never pinned, never
reniced), as a person runs it from a shell, against the scripted reference
server (benchpack.refserver.server, its own process), which records when it
read every request and when it wrote every token: the truth each tool's
figures are checked against. Tools:

* `benchpack`: `benchpack run` on a one-case pack (cold prompts), the
  single-stream blocks through its base cases, the 16/64-stream blocks
  through its concurrency lane;
* `aiohttp`: a plain aiohttp loop, vLLM `bench serve`'s client stack
  (bench/peers/loops.py);
* `httpx`: a plain httpx.Client.stream + iter_lines loop, a thread per stream;
* `guidellm`, `aiperf`: the released tools (pinned below, the pins of
  scripts/interop-tools.sh), each installed with pip from PyPI into a virtual
  environment of its own: by default the ones scripts/interop-tools.sh makes
  (run, and so created when missing), or one for both with `--peers-venv`. AIPerf is given a tokenizer made here from the
  test model's own vocabulary (bench/peers/tokenizer.py), never downloaded.

Blocks (each a few seconds per tool): one stream at 10 ms per token, one
stream at 0.5 ms per token, 16 streams and 64 streams. In every round each
tool runs once per block, in an order rotated per round, so the machine's
noise falls on all of them alike. Per block and tool:

* TTFT error: |tool's TTFT − server's (request arrived → first content
  token written)|, median and p99 (nearest rank) over every request. The
  arrival is the kernel's receive stamp of the request's first bytes on the
  server's socket (the reference server's `request_stamps`), so the
  server's own wake-up and parsing under 64 connections is not charged to
  any tool;
* TPOT error: |tool's TPOT − server's token spacing| / server spacing, p99;
* CPU per chunk: the tool process's whole CPU (user + system, children
  included, from wait4) / content chunks the server wrote for it, and the
  steady-state share: CPU between the server reading its first request and
  writing its last token, sampled from /proc;
* the 1-minute load average before and after the block.

Requests are paired with the server's records by the nonce line each
prompt starts with (benchpack's cold-prompt form, `[nonce <20 digits>]`);
the loops use the same form; GuideLLM and AIPerf read their prompts from a
file of such lines. The tables go to stdout as Markdown (docs/measurement.md
keeps them).

Bytecode: every tool runs with its bytecode cache written (an untimed
warm-up invocation of each tool comes first), as an installed tool has;
PYTHONDONTWRITEBYTECODE in this project's environment would otherwise make
each process compile every module it imports. Outputs go to
the work directory (tmpfs, /dev/shm, by default), so no tool is charged for
the disk's journal.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchpack.refserver.server import RefServer  # noqa: E402

GUIDELLM = "guidellm==0.8.1"
AIPERF = "aiperf==0.13.0"
NONCE = re.compile(r"\[nonce (\d{20})\]")
PEERS = ("guidellm", "aiperf")
TICK_S = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


@dataclass(frozen=True)
class Block:
    name: str
    streams: int
    requests: int
    tokens: int
    ttft_s: float
    itl_s: float


BLOCKS = (
    Block("1 stream, 10 ms/token", 1, 100, 8, 0.010, 0.010),
    Block("1 stream, 0.5 ms/token", 1, 100, 64, 0.010, 0.0005),
    Block("16 streams", 16, 64, 16, 0.020, 0.010),
    Block("64 streams", 64, 128, 16, 0.020, 0.010),
)


@dataclass
class Seen:
    """One request as a tool reported it."""

    key: str | None          # the nonce (20 digits), or None when only the order pairs it
    ttft_s: float | None
    tpot_s: float | None
    start_wall: float | None = None  # for tools without nonces: pairs by start order


@dataclass
class Figures:
    ttft_err_ms: list[float] = field(default_factory=list)
    tpot_err_pct: list[float] = field(default_factory=list)
    cpu_s: float = 0.0
    steady_cpu_s: float = 0.0
    chunks: int = 0
    unpaired: int = 0
    no_tpot: int = 0  # requests of 2+ tokens the tool gave no TPOT (benchpack: every token in one read)
    failures: list[str] = field(default_factory=list)


def pct(values: list[float], p: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


# ---- the tools ----------------------------------------------------------------------------------------------

@dataclass
class Tool:
    name: str
    command: Callable[[Block, str, Path], list[str]]   # (block, chat URL, this run's directory) -> argv
    results: Callable[[Path], list[Seen]]


def benchpack_pack(block: Block, where: Path) -> Path:
    pack = where / "pack"
    pack.mkdir(parents=True, exist_ok=True)
    lanes = ""
    if block.streams > 1:
        lanes = (f'\n[lanes.concurrency]\nlevels = [{block.streams}]\nrequests = {block.requests}\n'
                 f'cases = ["p"]\n')
    (pack / "benchpack.toml").write_text(
        f'[pack]\nid = "side-by-side"\nversion = "1.0.0"\ndescription = "bench/sidebyside.py"\n\n'
        f'[defaults]\nmax_tokens = {block.tokens}\nstream = true\nwarmup = 1\n'
        f'repetitions = {block.requests}\nprompt_cache = "cold"\n\n'
        f'[[cases]]\nid = "p"\nkind = "chat"\nprompt = "say something"\n\n[scoring]\nmode = "none"\n{lanes}',
        encoding="utf-8")
    return pack


def benchpack_command(block: Block, url: str, where: Path) -> list[str]:
    pack = benchpack_pack(block, where)
    lanes = "concurrency" if block.streams > 1 else "base"
    return [sys.executable, "-m", "benchpack.cli", "run", str(pack), "--adapter", "openai-chat", "--model", "ref",
            "--endpoint", url, "--out", str(where / "out"), "--lanes", lanes]


def benchpack_results(where: Path) -> list[Seen]:
    seen = []
    for line in (where / "out" / "run.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        nonce = (row.get("prompt_cache") or {}).get("nonce")
        timing = row.get("timing") or {}
        seen.append(Seen(f"{int(nonce, 16):020d}" if nonce else None, timing.get("ttft_s"), timing.get("tpot_s")))
    return seen


def loop_command(kind: str) -> Callable[[Block, str, Path], list[str]]:
    def command(block: Block, url: str, where: Path) -> list[str]:
        return [sys.executable, str(ROOT / "bench" / "peers" / "loops.py"), kind, url, "--requests",
                str(block.requests), "--concurrency", str(block.streams), "--max-tokens", str(block.tokens),
                "--out", str(where / "results.jsonl")]
    return command


def loop_results(where: Path) -> list[Seen]:
    seen = []
    for line in (where / "results.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if "nonce" in record:
            seen.append(Seen(record["nonce"], record["ttft_s"], record["tpot_s"]))
    return seen


def tools(peers: dict[str, Path] | None, names: list[str]) -> list[Tool]:
    from bench.peers import released

    known = {
        "benchpack": Tool("benchpack", benchpack_command, benchpack_results),
        "aiohttp": Tool("aiohttp", loop_command("aiohttp"), loop_results),
        "httpx": Tool("httpx", loop_command("httpx"), loop_results),
    }
    if peers is not None:
        known["guidellm"] = Tool("guidellm", released.guidellm_command(peers["guidellm"]), released.guidellm_results)
        known["aiperf"] = Tool("aiperf", released.aiperf_command(peers["aiperf"]), released.aiperf_results)
    return [known[name] for name in names if name in known]


# ---- running one tool ---------------------------------------------------------------------------------------

def _tree_cpu_s(pid: int) -> float:
    """utime + stime of `pid` and every live descendant, plus what they reaped (cutime, cstime)."""
    total, todo = 0, [pid]
    while todo:
        current = todo.pop()
        try:
            fields = Path(f"/proc/{current}/stat").read_text().rsplit(")", 1)[1].split()
            total += sum(int(x) for x in fields[11:15])
            for task in os.listdir(f"/proc/{current}/task"):
                children = Path(f"/proc/{current}/task/{task}/children").read_text().split()
                todo.extend(int(c) for c in children)
        except (OSError, ValueError, IndexError):
            continue
    return total / TICK_S


def run_tool(tool: Tool, block: Block, srv: RefServer, where: Path, env: dict) -> tuple[list[Seen], dict, list]:
    """One process of `tool` for `block`: what it reported, its rusage, CPU samples (perf_counter, cpu_s)."""
    where.mkdir(parents=True, exist_ok=True)
    argv = tool.command(block, srv.openai_url, where)
    with open(where / "stdout.txt", "wb") as out, open(where / "stderr.txt", "wb") as err:
        process = subprocess.Popen(argv, stdout=out, stderr=err, env=env, cwd=where)
        samples: list[tuple[float, float]] = []
        stop = threading.Event()

        def sample() -> None:
            while not stop.is_set():
                samples.append((time.perf_counter(), _tree_cpu_s(process.pid)))
                stop.wait(0.02)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        stop.set()
        sampler.join()
    rusage = {"cpu_s": usage.ru_utime + usage.ru_stime, "returncode": process.returncode}
    try:
        seen = tool.results(where)
    except (OSError, ValueError, KeyError) as exc:
        rusage["error"] = f"{type(exc).__name__}: {exc}"
        seen = []
    return seen, rusage, samples


def _cpu_at(samples: list[tuple[float, float]], at: float) -> float | None:
    before = [cpu for t, cpu in samples if t <= at]
    return before[-1] if before else None


def score(block: Block, tool_seen: list[Seen], records: list[dict], rusage: dict, samples: list,
          figures: Figures) -> None:
    served = [r for r in records if r.get("content_times")]
    by_nonce = {}
    for record in served:
        content = str(((record.get("body") or {}).get("messages") or [{}])[0].get("content", ""))
        match = NONCE.search(content)
        if match:
            by_nonce[match.group(1)] = record
    keyed = [s for s in tool_seen if s.key is not None]
    pairs = [(s, by_nonce.get(s.key)) for s in keyed]
    unkeyed = sorted((s for s in tool_seen if s.key is None), key=lambda s: s.start_wall or 0.0)
    if unkeyed:  # tools without our nonces: pair by start order (within a wave every script is the same)
        rest = sorted((r for r in served if r not in [p[1] for p in pairs]), key=lambda r: r["received_at"])
        pairs += list(zip(unkeyed, rest[-len(unkeyed):]))
    for seen, record in pairs:
        if record is None or seen.ttft_s is None:
            figures.unpaired += 1
            continue
        sent = record["content_times"]
        arrived = record.get("arrived_at") or record["received_at"]
        figures.ttft_err_ms.append(abs(seen.ttft_s - (sent[0] - arrived)) * 1e3)
        if len(sent) > 1 and seen.tpot_s is None:
            figures.no_tpot += 1
        elif len(sent) > 1:
            truth = (sent[-1] - sent[0]) / (len(sent) - 1)
            figures.tpot_err_pct.append(abs(seen.tpot_s - truth) / truth * 100)
    figures.chunks += sum(len(r["content_times"]) for r in served)
    figures.cpu_s += rusage["cpu_s"]
    if served:
        first = min(r["received_at"] for r in served)
        last = max(r["content_times"][-1] for r in served)
        begin, end = _cpu_at(samples, first), _cpu_at(samples, last + 0.02)
        if begin is not None and end is not None:
            figures.steady_cpu_s += end - begin
    if rusage.get("returncode") or rusage.get("error"):
        figures.failures.append(f"exit {rusage.get('returncode')} {rusage.get('error', '')}".strip())


# ---- the bench ----------------------------------------------------------------------------------------------

def environment(work: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(ROOT)
    env["NO_COLOR"] = "1"
    return env


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--tools", default="benchpack,aiohttp,httpx,guidellm,aiperf")
    parser.add_argument("--peer-rounds", type=int, default=1,
                        help="rounds GuideLLM and AIPerf take part in (each of their runs takes a minute or more "
                             "of wall time here: torch and, for AIPerf, a dozen service processes start)")
    parser.add_argument("--blocks", default="all", help="comma-separated block numbers (1-4) or all")
    parser.add_argument("--peers-venv", type=Path, default=None,
                        help="one virtual environment for both GuideLLM and AIPerf (created with pip when missing); "
                             "default: each tool's own, as scripts/interop-tools.sh makes them")
    parser.add_argument("--skip-peer-warmup", action="store_true",
                        help="no untimed warm-up run of GuideLLM/AIPerf (their bytecode is already cached)")
    parser.add_argument("--no-peers", action="store_true", help="leave GuideLLM and AIPerf out")
    parser.add_argument("--work", type=Path, default=None, help="work directory (default: under /dev/shm)")
    parser.add_argument("--port", type=int, default=0, help="the scripted server's port (0: a free one)")
    args = parser.parse_args()

    names = [n.strip() for n in args.tools.split(",") if n.strip()]
    peers = None
    if not args.no_peers and {"guidellm", "aiperf"} & set(names):
        from bench.peers import released

        if args.peers_venv is None:
            peers, why = released.interop_venvs((GUIDELLM, AIPERF))
        else:
            venv, why = released.ensure_venv(args.peers_venv, (GUIDELLM, AIPERF))
            peers = None if venv is None else {"guidellm": venv, "aiperf": venv}
        if peers is None:
            print(f"GuideLLM and AIPerf left out: {why}", file=sys.stderr)
    selected = tools(peers, names)
    blocks = list(BLOCKS) if args.blocks == "all" else [BLOCKS[int(i) - 1] for i in args.blocks.split(",")]
    base = Path("/dev/shm") if Path("/dev/shm").is_dir() else None
    work = args.work or Path(tempfile.mkdtemp(prefix="benchpack-sidebyside-", dir=base))
    env = environment(work)
    if peers is not None:
        from bench.peers import released

        released.prepare(peers["aiperf"], work, env)
    print(f"{sys.version.split()[0]}, {os.uname().sysname} {os.uname().release}, {os.cpu_count()} CPUs; "
          f"tools: {', '.join(t.name for t in selected)}; {args.rounds} rounds, order rotated per round; "
          f"work directory {work}.\n")
    table: list[str] = []
    for number, block in enumerate(blocks, 1):
        figures = {tool.name: Figures() for tool in selected}
        load_before = os.getloadavg()[0]
        with RefServer(port=args.port, ttft_s=block.ttft_s, itl_s=block.itl_s, default_tokens=block.tokens, timings=False,
                       request_stamps=True, models=["ref"]) as srv:
            warmups = [t for t in selected if not (args.skip_peer_warmup and t.name in PEERS)] if number == 1 else []
            for tool in warmups:  # untimed warm-up: bytecode caches, page cache
                warm = Block(block.name, block.streams, max(2, block.streams), block.tokens, block.ttft_s, block.itl_s)
                srv.reset()
                run_tool(tool, warm, srv, work / "warmup" / f"{number}-{tool.name}", env)
            for round_number in range(args.rounds):
                order = selected[round_number % len(selected):] + selected[:round_number % len(selected)]
                for tool in order:
                    if tool.name in PEERS and round_number >= args.peer_rounds:
                        continue
                    srv.reset()
                    where = work / f"block{number}" / f"round{round_number}" / tool.name
                    seen, rusage, samples = run_tool(tool, block, srv, where, env)
                    score(block, seen, srv.log(), rusage, samples, figures[tool.name])
                    print(f"  {block.name} round {round_number + 1} {tool.name}: {len(seen)} requests, "
                          f"cpu {rusage['cpu_s']:.2f} s, exit {rusage['returncode']}", file=sys.stderr, flush=True)
        load_after = os.getloadavg()[0]
        table += block_rows(block, figures, load_before, load_after)
    print("| block | load avg before → after | tool | requests paired | TTFT err p50 (ms) | TTFT err p99 (ms) "
          "| TPOT err p99 (%) | CPU per chunk, whole process (µs) | CPU per chunk, steady state (µs) "
          "| whole-process CPU vs aiohttp |")
    print("|---" * 10 + "|")
    print("\n".join(table))
    return 0


def block_rows(block: Block, figures: dict[str, Figures], load_before: float, load_after: float) -> list[str]:
    def fmt(value: float | None, digits: int) -> str:
        return "—" if value is None else f"{value:.{digits}f}"

    aiohttp = figures.get("aiohttp")
    base = aiohttp.cpu_s / aiohttp.chunks if aiohttp and aiohttp.chunks else None
    rows = []
    for name, f in figures.items():
        per_chunk = f.cpu_s / f.chunks if f.chunks else None
        steady = f.steady_cpu_s / f.chunks if f.chunks else None
        ratio = f"{per_chunk / base:.2f}×" if per_chunk is not None and base else "—"
        note = f" ({len(f.failures)} failed runs: {f.failures[0]})" if f.failures else ""
        if f.no_tpot:  # out of the TPOT figure, and said so (docs/measurement.md, "What the reads could not see")
            note += f" ({f.no_tpot} without TPOT)"
        rows.append(f"| {block.name} | {load_before:.1f} → {load_after:.1f} | {name}{note} | {len(f.ttft_err_ms)} "
                    f"| {fmt(pct(f.ttft_err_ms, 50), 3)} | {fmt(pct(f.ttft_err_ms, 99), 3)} "
                    f"| {fmt(pct(f.tpot_err_pct, 99), 3)} | {fmt(None if per_chunk is None else per_chunk * 1e6, 1)} "
                    f"| {fmt(None if steady is None else steady * 1e6, 1)} | {ratio} |")
    return rows


if __name__ == "__main__":
    raise SystemExit(main())
