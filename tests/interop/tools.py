"""Where scripts/interop-tools.sh put the pinned tools (Harbor, GuideLLM, AIPerf): the script owns the layout."""

from __future__ import annotations

import subprocess
from functools import lru_cache
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "interop-tools.sh"


@lru_cache(maxsize=1)
def venvs() -> dict[str, Path]:
    done = subprocess.run(["bash", str(SCRIPT), "--paths"], capture_output=True, text=True, check=True)
    return {name: Path(path) for name, path in (line.split(" ", 1) for line in done.stdout.splitlines())}


def tool_missing(name: str) -> str | None:
    """None when the tool's venv is installed, else why not."""
    python = venvs()[name] / "bin" / "python"
    return None if python.is_file() else f"{name} venv missing at {python.parent.parent}"


def harbor_python() -> Path:
    return venvs()["harbor"] / "bin" / "python"
