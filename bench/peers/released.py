"""GuideLLM and AIPerf for bench/sidebyside.py: their virtual environment, how each is run and read back.

Both are installed with pip from PyPI, pinned, into a virtual environment of
their own (`ensure_venv`), never into the project's. AIPerf needs a
tokenizer; `prepare` makes one here (bench/peers/tokenizer.py) rather than
downloading one.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Callable

HERE = Path(__file__).resolve().parent


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


def _installed(python: Path, requirements: tuple[str, ...]) -> bool:
    probe = ("import importlib.metadata as m, sys\n"
             "ok = all(m.version(r.split('==')[0]) == r.split('==')[1] for r in sys.argv[1:])\n"
             "sys.exit(0 if ok else 1)\n")
    try:
        return subprocess.run([str(python), "-c", probe, *requirements], capture_output=True).returncode == 0
    except OSError:
        return False


def prepare(venv: Path, work: Path, env: dict) -> None:
    """Files both tools read: a tokenizer directory made here, the prompt files with nonce lines."""
    tokenizer = work / "tokenizer"
    if not (tokenizer / "tokenizer.json").exists():
        subprocess.run([str(venv / "bin" / "python"), str(HERE / "tokenizer.py"), str(tokenizer)], check=True)
    env["BENCH_TOKENIZER"] = str(tokenizer)


def guidellm_command(venv: Path) -> Callable:
    def command(block, url: str, where: Path) -> list[str]:
        raise NotImplementedError
    return command


def guidellm_results(where: Path) -> list:
    raise NotImplementedError


def aiperf_command(venv: Path) -> Callable:
    def command(block, url: str, where: Path) -> list[str]:
        raise NotImplementedError
    return command


def aiperf_results(where: Path) -> list:
    raise NotImplementedError
