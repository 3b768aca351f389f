"""GuideLLM and AIPerf for bench/sidebyside.py: their virtual environments, how each is run and read back.

Each is installed with pip from PyPI, pinned, into a virtual environment of
its own, never into the project's: by default the ones scripts/interop-tools.sh
makes for the interop tests (`interop_venvs`: one venv per tool, so the two
tools' dependencies never have to agree), or one venv for both given with
sidebyside's `--peers-venv` (`ensure_venv`). AIPerf needs a tokenizer;
`prepare` makes one here (bench/peers/tokenizer.py) rather than downloading one.
"""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path
from typing import Callable

HERE = Path(__file__).resolve().parent
INTEROP_TOOLS = HERE.parents[1] / "scripts" / "interop-tools.sh"
NONCE = re.compile(r"\[nonce (\d{20})\]")


def ensure_venv(venv: Path, requirements: tuple[str, ...]) -> tuple[Path | None, str]:
    """The venv with `requirements` installed (created with `python -m venv` + pip when missing), or None and why."""
    python = venv / "bin" / "python"
    try:
        if not python.exists():
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True, text=True)
        if not _installed(python, requirements):
            subprocess.run([str(python), "-m", "pip", "install", "--quiet", *requirements], check=True,
                           capture_output=True, text=True, timeout=1800)
    except subprocess.CalledProcessError as exc:
        return None, f"{' '.join(map(str, exc.cmd))} failed: {(exc.stderr or exc.stdout or '').strip()[-2000:]}"
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"{type(exc).__name__}: {exc}"
    return venv, ""


def interop_venvs(requirements: tuple[str, ...]) -> tuple[dict[str, Path] | None, str]:
    """GuideLLM's and AIPerf's own venvs as scripts/interop-tools.sh makes them (installing when missing), keyed by
    tool name, or None and why. Each must hold exactly its pin in `requirements`: the script and this bench pin
    the same releases, and a mismatch is said rather than measured."""
    try:
        made = subprocess.run(["bash", str(INTEROP_TOOLS)], check=True, capture_output=True, text=True, timeout=3600)
    except subprocess.CalledProcessError as exc:
        return None, f"{INTEROP_TOOLS.name} failed: {(exc.stderr or exc.stdout or '').strip()[-2000:]}"
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"{type(exc).__name__}: {exc}"
    paths = dict(line.split(" ", 1) for line in made.stdout.splitlines() if " " in line)
    venvs = {}
    for requirement in requirements:
        name = requirement.split("==")[0]
        if name not in paths or not _installed(Path(paths[name]) / "bin" / "python", (requirement,)):
            return None, f"{INTEROP_TOOLS.name} gave no venv with {requirement} (its pins differ from this bench's?)"
        venvs[name] = Path(paths[name])
    return venvs, ""


def _installed(python: Path, requirements: tuple[str, ...]) -> bool:
    probe = ("import importlib.metadata as m, sys\n"
             "ok = all(m.version(r.split('==')[0]) == r.split('==')[1] for r in sys.argv[1:])\n"
             "sys.exit(0 if ok else 1)\n")
    try:
        return subprocess.run([str(python), "-c", probe, *requirements], capture_output=True).returncode == 0
    except OSError:
        return False


def prepare(venv: Path, work: Path, env: dict) -> None:
    """Files both tools read: a tokenizer directory made here with `venv`'s `tokenizers` (AIPerf's venv: it
    brings transformers), the prompt files with nonce lines."""
    tokenizer = work / "tokenizer"
    if not (tokenizer / "tokenizer.json").exists():
        subprocess.run([str(venv / "bin" / "python"), str(HERE / "tokenizer.py"), str(tokenizer)], check=True)
    env["BENCH_TOKENIZER"] = os.environ["BENCH_TOKENIZER"] = str(tokenizer)  # read by aiperf_command


def prompts_file(where: Path, count: int, field: str) -> Path:
    """`count` prompts, each starting with a fresh nonce line (benchpack's cold-prompt form), one JSON a line."""
    path = where / "prompts.jsonl"
    with open(path, "w", encoding="utf-8") as out:
        for _ in range(count):
            out.write(json.dumps({field: f"[nonce {random.getrandbits(64):020d}]\nsay something"}) + "\n")
    return path


def _base(url: str) -> str:
    return url.split("/v1/", 1)[0]


def _nonce(text: str) -> str | None:
    match = NONCE.search(text)
    return match.group(1) if match else None


def guidellm_command(venv: Path) -> Callable:
    def command(block, url: str, where: Path) -> list[str]:
        data = prompts_file(where, block.requests, "prompt")
        return [str(venv / "bin" / "guidellm"), "run",
                "--backend", f"kind=openai_http,target={_base(url)},model=ref",
                "--profile", f"kind=concurrent,streams={block.streams}",
                "--constraint", f"kind=max_requests,count={block.requests}",
                "--data", f"kind=json_file,path={data}",
                "--output", f"kind=json,path={where / 'guidellm.json'}",
                "--disable-console-interactive"]
    return command


def guidellm_results(where: Path) -> list:
    """Per request: GuideLLM's own time_to_first_token_ms and inter_token_latency_ms (first to last token)."""
    from bench.sidebyside import Seen

    report = json.loads((where / "guidellm.json").read_text(encoding="utf-8"))
    seen = []
    for benchmark in report["benchmarks"]:
        for request in benchmark["requests"]["successful"]:
            ttft, itl = request.get("time_to_first_token_ms"), request.get("inter_token_latency_ms")
            seen.append(Seen(_nonce(str(request.get("request_args", ""))), None if ttft is None else ttft / 1e3,
                             None if itl is None else itl / 1e3))
    return seen


def aiperf_command(venv: Path) -> Callable:
    def command(block, url: str, where: Path) -> list[str]:
        data = prompts_file(where, block.requests, "text")
        return [str(venv / "bin" / "aiperf"), "profile", "--model", "ref", "--url", _base(url),
                "--endpoint-type", "chat", "--streaming", "--concurrency", str(block.streams),
                "--request-count", str(block.requests), "--tokenizer", os.environ.get("BENCH_TOKENIZER", ""),
                "--input-file", str(data), "--custom-dataset-type", "single_turn",
                "--artifact-dir", str(where / "aiperf"), "--ui-type", "none"]
    return command


def aiperf_results(where: Path) -> list:
    """Per request: AIPerf's own time_to_first_token and inter_token_latency (its TPOT), paired by the nonce of
    the conversation the record names (inputs.json keeps each conversation's payload)."""
    from bench.sidebyside import Seen

    out = where / "aiperf"
    inputs = json.loads((out / "inputs.json").read_text(encoding="utf-8"))
    nonces = {}
    for conversation in inputs.get("data", []):
        for payload in conversation.get("payloads", []):
            nonces[conversation["session_id"]] = _nonce(json.dumps(payload.get("messages", [])).replace("\\n", " "))
    seen = []
    for line in (out / "profile_export.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        metrics = record.get("metrics") or {}
        if (record.get("metadata") or {}).get("benchmark_phase", "profiling") != "profiling":
            continue
        ttft = (metrics.get("time_to_first_token") or {}).get("value")
        itl = (metrics.get("inter_token_latency") or {}).get("value")
        seen.append(Seen(nonces.get((record.get("metadata") or {}).get("conversation_id")),
                         None if ttft is None else ttft / 1e3, None if itl is None else itl / 1e3))
    return seen
