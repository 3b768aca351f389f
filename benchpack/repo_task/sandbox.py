"""Running candidate code under bubblewrap: what it sees, what it may write, and nothing else.

Every process that runs code the model wrote or chose — an external agent,
the visible tests, the code under a verifier's hidden checks, a matcher, a
build script — runs through this module. With bubblewrap (`bwrap`, Debian
package `bubblewrap`) the process gets:

* a fresh mount namespace whose root is an empty tmpfs; system directories
  (`/usr`, the merged-usr links, a short list of `/etc` files), the Python
  interpreter the runner uses (its venv and base prefix) and paths the caller
  names are bound **read-only** at their own paths;
* the directories the caller names as writable (the workspace, or a scratch
  copy of it) bound read-write — the only writable places besides an empty
  `/tmp`;
* *hidden* paths (the pack, the run directory) masked by an empty tmpfs if a
  read-only bind would otherwise expose them, and *secret* paths (the pack's
  `verify/` directory with hidden tests and labels) never bindable at all;
* new PID, network, IPC, UTS, cgroup and user namespaces (a fresh `/proc`
  that shows only the sandbox's own processes, no network but loopback), no
  capabilities, its own session, a cleared environment, and death with its
  parent.

`SandboxPolicy` is the run-wide part (computed once by the runner);
`sandbox_command()` turns it plus the per-call paths into an argv (the
mount logic lives in the dependency-free `bwrap_args.py`). The same policy
travels to verifiers as JSON in `BENCHPACK_SANDBOX_POLICY`, and a verifier
runs candidate code through the launcher — `bwrap_args.py` run as a script,
`python -I -B -S …/bwrap_args.py --cwd DIR --writable DIR -- argv…` (its argv
is in `BENCHPACK_SANDBOX_LAUNCHER`) — so pack code never builds bwrap
arguments itself.

Mode `none` (`--unsandboxed`) runs the same commands with the same cleaned
environment but without isolation; results say `sandbox: none`.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

from benchpack.errors import ConfigError, Problem
from benchpack.repo_task import bwrap_args
from benchpack.repo_task.bwrap_args import BUBBLEWRAP, MODES, NONE

MODE_ENV = "BENCHPACK_SANDBOX"  # "bubblewrap" | "none", for verifiers' information
POLICY_ENV = bwrap_args.POLICY_ENV  # the policy as JSON, read by the launcher
LAUNCHER_ENV = "BENCHPACK_SANDBOX_LAUNCHER"  # JSON argv of the launcher, for verifiers
READ_ONLY_ENV = "BENCHPACK_SANDBOX_READ_ONLY"  # user: extra read-only paths (os.pathsep-separated)
SANDBOX_HOME = "/tmp/home"
SANDBOX_TMP = "/tmp"
INSTALL_HINT = "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap)"


class SandboxError(ConfigError):
    """A sandbox request that would expose what must stay hidden, or bad launcher input."""


def _real(path: str | Path) -> str:
    return os.path.realpath(os.fspath(path))


@functools.cache
def probe_bubblewrap() -> tuple[str | None, str | None]:
    """(path to a working bwrap, None) or (None, why there is no usable sandbox)."""
    path = shutil.which("bwrap")
    if path is None:
        return None, "bwrap is not on PATH"
    probe = [path, "--unshare-all", "--die-with-parent", "--cap-drop", "ALL", "--ro-bind", "/", "/",
             "--proc", "/proc", "--dev", "/dev", "--", "true"]  # fmt: skip
    try:
        result = subprocess.run(probe, capture_output=True, timeout=20, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"{path} could not be run: {exc}"
    if result.returncode != 0:
        why = result.stderr.decode("utf-8", "replace").strip().splitlines()
        return None, f"{path} cannot create namespaces here: {why[-1] if why else f'exit {result.returncode}'}"
    return path, None


def interpreter_paths() -> tuple[str, ...]:
    """The runner's Python: its venv and the base installation it points to (never sys.path entries,
    which may include a source checkout that holds the packs)."""
    paths = {sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix}
    paths.add(str(Path(_real(sys.executable)).parent.parent))
    return tuple(sorted({_real(p) for p in paths if p and os.path.isdir(p)}))


@dataclass(frozen=True)
class SandboxPolicy:
    mode: str
    bwrap: str | None = None
    read_only: tuple[str, ...] = ()  # bound read-only at their own path in every sandbox
    hidden: tuple[str, ...] = ()  # masked with an empty tmpfs wherever a bind would expose them
    secret: tuple[str, ...] = ()  # never bound, not even read-only; masked inside any bind
    home: str = SANDBOX_HOME  # HOME inside (bubblewrap: a tmpfs path; none: a private directory)
    tmp: str = SANDBOX_TMP
    path_dirs: tuple[str, ...] = field(default=())  # PATH inside, in order

    @property
    def label(self) -> str:
        return self.mode

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> SandboxPolicy:
        data = json.loads(text)
        if not isinstance(data, dict) or data.get("mode") not in MODES:
            raise SandboxError(Problem(POLICY_ENV, "mode", f"must be one of {', '.join(MODES)}"))
        fields = {k: tuple(v) if isinstance(v, list) else v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**fields)


def extra_read_only_from_env(env: dict[str, str] | os._Environ) -> tuple[str, ...]:
    raw = env.get(READ_ONLY_ENV, "")
    paths = [p for p in raw.split(os.pathsep) if p]
    bad = [p for p in paths if not os.path.isabs(p) or not os.path.exists(p)]
    if bad:
        raise ConfigError(Problem(READ_ONLY_ENV, "", "must list existing absolute paths; not: " + ", ".join(bad)))
    return tuple(_real(p) for p in paths)


def make_policy(*, unsandboxed: bool, hidden: tuple[Path, ...], secret: tuple[Path, ...],
                extra_read_only: tuple[str, ...] = (), private_dir: Path | None = None) -> SandboxPolicy:  # fmt: skip
    """The run-wide policy; raises ConfigError when no sandbox is available and `unsandboxed` is false."""
    interpreter = interpreter_paths()
    path_dirs = (str(Path(sys.executable).parent), "/usr/local/bin", "/usr/bin", "/bin")
    if unsandboxed:  # a private HOME and TMPDIR, so honest tools write nothing shared
        private = Path(private_dir or tempfile.mkdtemp(prefix="benchpack-sandbox-"))
        home, tmp = private / "home", private / "tmp"
        home.mkdir(parents=True, exist_ok=True)
        tmp.mkdir(parents=True, exist_ok=True)
        return SandboxPolicy(NONE, None, interpreter + tuple(extra_read_only), tuple(map(_real, hidden)),
                             tuple(map(_real, secret)), str(home), str(tmp), path_dirs)  # fmt: skip
    bwrap, why = probe_bubblewrap()
    if bwrap is None:
        raise ConfigError(Problem("sandbox", "bubblewrap",
                                  f"{why}: repo tasks run model-written code only inside a sandbox; {INSTALL_HINT}, "
                                  "or pass --unsandboxed to run without one (every result is then marked sandbox: none)"))  # fmt: skip
    extra_dirs = tuple(p for p in extra_read_only if os.path.isdir(p))
    return SandboxPolicy(BUBBLEWRAP, bwrap, interpreter + tuple(extra_read_only), tuple(map(_real, hidden)),
                         tuple(map(_real, secret)), SANDBOX_HOME, SANDBOX_TMP, path_dirs + extra_dirs)  # fmt: skip


def sandbox_environment(policy: SandboxPolicy, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The whole environment of a sandboxed process: nothing inherited from the runner."""
    return bwrap_args.environment(asdict(policy), extra)


def sandbox_command(policy: SandboxPolicy, argv: list[str], *, cwd: str | Path, writable: tuple = (),
                    read_only: tuple = (), writable_files: tuple = (), env: dict[str, str] | None = None) -> list[str]:  # fmt: skip
    """The argv that runs `argv` in the sandbox (mode none: `argv` itself; the caller sets cwd and env
    with `popen_kwargs`). SandboxError for a bind inside a secret path."""
    try:
        return bwrap_args.command(asdict(policy), argv, cwd, writable, read_only, writable_files, env)
    except bwrap_args.BindRefused as exc:
        raise SandboxError(Problem("sandbox", "bind", str(exc))) from None


def popen_kwargs(policy: SandboxPolicy, *, cwd: str | Path, env: dict[str, str] | None = None) -> dict:
    """cwd/env for subprocess.Popen of a `sandbox_command` (bwrap sets both itself inside)."""
    return {"cwd": str(cwd), "env": bwrap_args.process_environment(asdict(policy), env)}


def verifier_environment(policy: SandboxPolicy) -> dict[str, str]:
    """What the runner adds to a verifier's environment so it can run candidate code the same way."""
    launcher = [sys.executable, "-I", "-B", "-S", str(Path(bwrap_args.__file__).resolve())]
    return {MODE_ENV: policy.mode, POLICY_ENV: policy.to_json(), LAUNCHER_ENV: json.dumps(launcher)}
