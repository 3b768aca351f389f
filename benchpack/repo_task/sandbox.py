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
`sandbox_command()` turns it plus the per-call paths into an argv. The same
policy travels to verifiers as JSON in `BENCHPACK_SANDBOX_POLICY`, and a
verifier runs candidate code through the launcher
`python -m benchpack.repo_task.sandbox --cwd DIR --writable DIR -- argv…`
(its argv is in `BENCHPACK_SANDBOX_LAUNCHER`), so pack code never builds
bwrap arguments itself.

Mode `none` (`--unsandboxed`) runs the same commands with the same cleaned
environment but without isolation; results say `sandbox: none`.
"""

from __future__ import annotations

import argparse
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

BUBBLEWRAP = "bubblewrap"
NONE = "none"
MODES = (BUBBLEWRAP, NONE)

MODE_ENV = "BENCHPACK_SANDBOX"  # "bubblewrap" | "none", for verifiers' information
POLICY_ENV = "BENCHPACK_SANDBOX_POLICY"  # the policy as JSON, read by the launcher
LAUNCHER_ENV = "BENCHPACK_SANDBOX_LAUNCHER"  # JSON argv of the launcher, for verifiers
READ_ONLY_ENV = "BENCHPACK_SANDBOX_READ_ONLY"  # user: extra read-only paths (os.pathsep-separated)

SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# /etc holds secrets (shadow, ssh host keys, ssl/private); only what programs
# need to start, resolve users and zones, and find shared libraries.
ETC_ENTRIES = (
    "alternatives", "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "timezone", "passwd", "group",
    "nsswitch.conf", "hosts", "mime.types", "os-release", "debian_version",
)  # fmt: skip
SANDBOX_HOME = "/tmp/home"
SANDBOX_TMP = "/tmp"
INSTALL_HINT = "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap)"


class SandboxError(ConfigError):
    """A sandbox request that would expose what must stay hidden, or bad launcher input."""


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


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
    if unsandboxed:
        home = str(Path(private_dir or tempfile.mkdtemp(prefix="benchpack-sandbox-")) / "home")
        os.makedirs(home, exist_ok=True)
        return SandboxPolicy(NONE, None, interpreter + tuple(extra_read_only), tuple(map(_real, hidden)),
                             tuple(map(_real, secret)), home, tempfile.gettempdir(), path_dirs)  # fmt: skip
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
    env = {
        "PATH": os.pathsep.join(policy.path_dirs),
        "HOME": policy.home,
        "TMPDIR": policy.tmp,
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",  # honest Python runs leave no bytecode in the workspace
        "PYTHONHASHSEED": "0",
    }
    env.update(extra or {})
    return env


def _check_bindable(path: str, policy: SandboxPolicy) -> None:
    for secret in policy.secret:
        if _inside(path, secret):
            raise SandboxError(Problem("sandbox", path, f"is inside {secret}, which must never be visible to candidate code"))


def _system_args() -> list[str]:
    args: list[str] = []
    for path in SYSTEM_DIRS:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    for name in ETC_ENTRIES:
        path = f"/etc/{name}"
        if os.path.lexists(path):
            args += ["--ro-bind-try", path, path]
    return args


def _masks(paths: tuple[str, ...], binds: list[str]) -> list[str]:
    """`--tmpfs` over every path that a bind in `binds` would otherwise expose."""
    args: list[str] = []
    for path in paths:
        if any(_inside(path, bound) for bound in binds):
            args += ["--tmpfs", path]
    return args


def sandbox_command(policy: SandboxPolicy, argv: list[str], *, cwd: str | Path, writable: tuple = (),
                    read_only: tuple = (), writable_files: tuple = (), env: dict[str, str] | None = None) -> list[str]:  # fmt: skip
    """The argv that runs `argv` in the sandbox (mode none: `argv` itself; the caller sets cwd and env).

    Mount order matters: system and interpreter binds, then masks for hidden
    and secret paths they expose, then the per-call read-only and writable
    binds (which may lie inside a masked path, e.g. a workspace inside the run
    directory), then masks for secrets those expose.
    """
    if policy.mode == NONE:
        return list(argv)
    call_ro = [_real(p) for p in read_only]
    call_rw = [_real(p) for p in (*writable, *writable_files)]
    for path in call_ro + call_rw:
        _check_bindable(path, policy)
    args = [policy.bwrap, "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL"]
    args += _system_args()
    args += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", policy.tmp, "--dir", policy.home]
    base = [p for p in policy.read_only if os.path.exists(p)]
    for path in base:
        args += ["--ro-bind", path, path]
    args += _masks(policy.hidden + policy.secret, base + list(SYSTEM_DIRS))
    for path in call_ro:
        args += ["--ro-bind", path, path]
    for path in call_rw:
        args += ["--bind", path, path]
    args += _masks(policy.secret, call_ro + call_rw)
    args += ["--chdir", _real(cwd), "--clearenv"]
    for key, value in sandbox_environment(policy, env).items():
        args += ["--setenv", key, value]
    return args + ["--", *argv]


def popen_kwargs(policy: SandboxPolicy, *, cwd: str | Path, env: dict[str, str] | None = None) -> dict:
    """cwd/env for subprocess.Popen of a `sandbox_command` (bwrap sets both itself inside)."""
    if policy.mode == NONE:
        return {"cwd": str(cwd), "env": sandbox_environment(policy, env)}
    return {"cwd": str(cwd), "env": {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}}


def verifier_environment(policy: SandboxPolicy) -> dict[str, str]:
    """What the runner adds to a verifier's environment so it can run candidate code the same way."""
    launcher = [sys.executable, "-I", "-B", "-m", "benchpack.repo_task.sandbox"]
    return {MODE_ENV: policy.mode, POLICY_ENV: policy.to_json(), LAUNCHER_ENV: json.dumps(launcher)}


# -- the launcher verifiers call ------------------------------------------------


def _parse_env(items: list[str]) -> dict[str, str]:
    env = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise SandboxError(Problem("benchpack sandbox", "--env", f"must be KEY=VALUE, got {item!r}"))
        env[key] = value
    return env


def main(argv: list[str] | None = None) -> int:
    """`python -m benchpack.repo_task.sandbox --cwd DIR [--writable DIR]… [--read-only PATH]… [--env K=V]… -- cmd…`."""
    parser = argparse.ArgumentParser(prog="python -m benchpack.repo_task.sandbox",
                                     description="Run a command under the run's sandbox policy (BENCHPACK_SANDBOX_POLICY).")  # fmt: skip
    parser.add_argument("--cwd", required=True)
    parser.add_argument("--writable", action="append", default=[])
    parser.add_argument("--read-only", action="append", default=[])
    parser.add_argument("--env", action="append", default=[])
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    try:
        if not command:
            raise SandboxError(Problem("benchpack sandbox", "command", "is missing (put it after --)"))
        raw = os.environ.get(POLICY_ENV)
        if not raw:
            raise SandboxError(Problem(POLICY_ENV, "", "is not set (the runner sets it for verifiers)"))
        policy = SandboxPolicy.from_json(raw)
        env = _parse_env(args.env)
        full = sandbox_command(policy, command, cwd=args.cwd, writable=tuple(args.writable),
                               read_only=tuple(args.read_only), env=env)  # fmt: skip
    except (ConfigError, ValueError) as exc:
        lines = exc.lines() if isinstance(exc, ConfigError) else [str(exc)]
        print("\n".join(f"benchpack sandbox: {line}" for line in lines), file=sys.stderr)
        return 125
    kwargs = popen_kwargs(policy, cwd=args.cwd, env=env)
    os.chdir(kwargs["cwd"])
    try:
        os.execvpe(full[0], full, kwargs["env"])
    except OSError as exc:
        print(f"benchpack sandbox: cannot run {full[0]!r}: {exc.strerror or exc}", file=sys.stderr)
        return 127


if __name__ == "__main__":
    sys.exit(main())
