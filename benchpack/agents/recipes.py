"""Built-in recipes for real coding agents from PyPI, each in a pinned tool environment of its own.

A recipe names a PyPI package at an exact version and a small kit script
(`kits/`) that the external-agent harness starts with that environment's
Python: it reads the task's context file and runs the agent on the
workspace against the endpoint the context names (the measuring proxy).
The agent is never a dependency of benchpack: `ensure_installed` makes
`~/.cache/benchpack/agents/<package>-<version>/` (or under
`$BENCHPACK_AGENTS_HOME`) on first use with `uv` when it is on PATH, else
`python -m venv` + pip, and marks it complete only when the install
succeeded. `benchpack agents install NAME` (and `.ci/run`) builds it ahead.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from benchpack.errors import ConfigError, Problem

KITS = Path(__file__).resolve().parent / "kits"
HOME_ENV = "BENCHPACK_AGENTS_HOME"
MARKER = ".benchpack-installed"


@dataclass(frozen=True)
class Recipe:
    name: str
    package: str
    version: str
    kit: str  # file in kits/
    description: str
    options: tuple[str, ...] = ()  # extra kit arguments
    step_flag: str | None = None  # the kit's flag for a model-call limit (`--agent-steps`), None: no such limit

    @property
    def requirement(self) -> str:
        return f"{self.package}=={self.version}"


RECIPES: dict[str, Recipe] = {
    "mini-swe-agent": Recipe(
        "mini-swe-agent", "mini-swe-agent", "2.4.6", "mini_swe_agent.py",
        "mini-swe-agent's DefaultAgent, text-based bash actions (mini_textbased.yaml), at most 20 model calls",
        ("--step-limit", "20"), "--step-limit",
    ),
    "aider": Recipe(
        "aider", "aider-chat", "0.86.2", "aider_agent.py",
        "aider in one-shot mode (--message), whole-file edits, no git, no repo map",
    ),
}


def recipe(name: str) -> Recipe:
    try:
        return RECIPES[name]
    except KeyError:
        raise ConfigError(Problem("--agent", name, f"unknown agent recipe; built in: {', '.join(sorted(RECIPES))}")) from None


def agents_home() -> Path:
    return Path(os.environ.get(HOME_ENV) or Path.home() / ".cache" / "benchpack" / "agents")


def venv_path(r: Recipe) -> Path:
    return agents_home() / f"{r.package}-{r.version}"


def installed(r: Recipe) -> bool:
    venv = venv_path(r)
    return (venv / MARKER).is_file() and (venv / "bin" / "python").exists()


def ensure_installed(r: Recipe, announce=lambda text: None) -> Path:
    """The recipe's tool environment, made now if missing; ConfigError naming the package when that fails."""
    venv = venv_path(r)
    if installed(r):
        return venv
    announce(f"installing {r.requirement} into {venv} (once; its own environment, not benchpack's)")
    if venv.exists():
        shutil.rmtree(venv)  # a half-made environment from an interrupted install
    venv.parent.mkdir(parents=True, exist_ok=True)
    uv = shutil.which("uv")
    python = os.path.realpath(sys.executable)
    steps = ([[uv, "venv", "-q", "--python", python, str(venv)],
              [uv, "pip", "install", "-q", "--python", str(venv / "bin" / "python"), r.requirement]] if uv else
             [[python, "-m", "venv", str(venv)],
              [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", r.requirement]])  # fmt: skip
    for step in steps:
        done = subprocess.run(step, capture_output=True, text=True)
        if done.returncode != 0:
            why = (done.stderr or done.stdout).strip().splitlines()
            raise ConfigError(Problem("--agent", r.name, f"could not install {r.requirement}: "
                                      f"{why[-1] if why else f'exit {done.returncode}'}"))  # fmt: skip
    (venv / MARKER).write_text(r.requirement + "\n", encoding="utf-8")
    return venv


def agent_argv(r: Recipe, venv: Path | None = None, steps: int | None = None) -> list[str]:
    """The external-agent argv: the environment's Python, the kit, and the environment itself (an absolute
    directory in the argv, so the sandbox binds all of it read-only: repo_task.integration.agent_binds_for).
    `steps` replaces the recipe's model-call limit; ConfigError for a recipe without one."""
    venv = venv or venv_path(r)
    options = list(r.options)
    if steps is not None:
        if r.step_flag is None or steps < 1:
            why = "must be at least 1" if r.step_flag else "this recipe's agent has no step limit"
            raise ConfigError(Problem("--agent-steps", str(steps), why))
        if r.step_flag in options:
            options[options.index(r.step_flag) + 1] = str(steps)
        else:
            options += [r.step_flag, str(steps)]
    return [str(venv / "bin" / "python"), str(KITS / r.kit), "--agent-home", str(venv), *options]


def main(argv: list[str] | None = None) -> int:
    """`python -m benchpack.agents.recipes [NAME...]`: build the recipes' environments (CI does this)."""
    names = (argv if argv is not None else sys.argv[1:]) or sorted(RECIPES)
    for name in names:
        venv = ensure_installed(recipe(name), lambda text: print(f"benchpack agents: {text}", flush=True))
        print(f"{name}: {venv}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
