"""The bwrap command line for one sandboxed process, and the launcher verifiers call.

Standard library only and no package imports, on purpose: verifiers run it
as a script — `python -I -B -S .../bwrap_args.py --cwd DIR --writable DIR
[--read-only PATH]… [--env K=V]… -- cmd…` — once per candidate process, and
without `site` and the benchpack package it starts in a few milliseconds
instead of ~100 (bench/sandbox_overhead.py). `sandbox.py` wraps it for the
runner with types and errors; the policy is the JSON form of
`sandbox.SandboxPolicy`, passed in `BENCHPACK_SANDBOX_POLICY`.
"""

import json
import os
import sys

BUBBLEWRAP = "bubblewrap"
NONE = "none"
MODES = (BUBBLEWRAP, NONE)
POLICY_ENV = "BENCHPACK_SANDBOX_POLICY"
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# /etc holds secrets (shadow, ssh host keys, ssl/private); only what programs
# need to start, resolve users and zones, and find shared libraries.
ETC_ENTRIES = (
    "alternatives", "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "timezone", "passwd", "group",
    "nsswitch.conf", "hosts", "mime.types", "os-release", "debian_version",
)  # fmt: skip


class BindRefused(ValueError):
    """A bind that would expose a secret path (the pack's verify/ directory)."""


def inside(path, root):
    return path == root or path.startswith(root.rstrip("/") + "/")


def environment(policy, extra=None):
    """The whole environment of a sandboxed process: nothing inherited from the runner."""
    env = {
        "PATH": os.pathsep.join(policy["path_dirs"]),
        "HOME": policy["home"],
        "TMPDIR": policy["tmp"],
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",  # honest Python runs leave no bytecode in the workspace
        "PYTHONHASHSEED": "0",
    }
    env.update(extra or {})
    return env


def _system_args():
    args = []
    for path in SYSTEM_DIRS:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    for name in ETC_ENTRIES:
        path = "/etc/" + name
        if os.path.lexists(path):
            args += ["--ro-bind-try", path, path]
    return args


def _masks(paths, binds):
    """`--tmpfs` over every path that a bind in `binds` would otherwise expose."""
    args = []
    for path in paths:
        if any(inside(path, bound) for bound in binds):
            args += ["--tmpfs", path]
    return args


def command(policy, argv, cwd, writable=(), read_only=(), writable_files=(), env=None):
    """The argv that runs `argv` in the sandbox (mode none: `argv` itself).

    Mount order matters: system and interpreter binds, then masks for hidden
    and secret paths they expose, then the per-call read-only and writable
    binds (which may lie inside a masked path, e.g. a workspace inside the run
    directory), then masks for secrets those expose.
    """
    if policy["mode"] == NONE:
        return list(argv)
    call_ro = [os.path.realpath(os.fspath(p)) for p in read_only]
    call_rw = [os.path.realpath(os.fspath(p)) for p in (*writable, *writable_files)]
    for path in call_ro + call_rw:
        for secret in policy["secret"]:
            if inside(path, secret):
                raise BindRefused(f"{path} is inside {secret}, which must never be visible to candidate code")
    args = [policy["bwrap"], "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL"]
    args += _system_args()
    args += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", policy["tmp"], "--dir", policy["home"]]
    base = [p for p in policy["read_only"] if os.path.exists(p)]
    for path in base:
        args += ["--ro-bind", path, path]
    args += _masks(tuple(policy["hidden"]) + tuple(policy["secret"]), base + list(SYSTEM_DIRS))
    for path in call_ro:
        args += ["--ro-bind", path, path]
    for path in call_rw:
        args += ["--bind", path, path]
    args += _masks(tuple(policy["secret"]), call_ro + call_rw)
    args += ["--chdir", os.path.realpath(os.fspath(cwd)), "--clearenv"]
    for key, value in environment(policy, env).items():
        args += ["--setenv", key, value]
    return args + ["--", *argv]


def process_environment(policy, env=None):
    """The environment of the process started with `command(...)` (bwrap sets the real one inside)."""
    if policy["mode"] == NONE:
        return environment(policy, env)
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}


USAGE = "usage: bwrap_args.py --cwd DIR [--writable DIR]... [--read-only PATH]... [--env KEY=VALUE]... -- COMMAND..."


def _parse(argv):
    """(cwd, writable, read_only, env, command) from the launcher's own arguments."""
    values = {"--cwd": [], "--writable": [], "--read-only": [], "--env": []}
    index = 0
    while index < len(argv) and argv[index] != "--":
        flag = argv[index]
        if flag not in values or index + 1 >= len(argv):
            raise ValueError(f"unexpected argument {flag!r}; {USAGE}")
        values[flag].append(argv[index + 1])
        index += 2
    command_argv = argv[index + 1:]
    if len(values["--cwd"]) != 1 or not command_argv:
        raise ValueError(USAGE)
    env = {}
    for item in values["--env"]:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"--env must be KEY=VALUE, got {item!r}")
        env[key] = value
    return values["--cwd"][0], values["--writable"], values["--read-only"], env, command_argv


def main(argv=None):
    """The launcher: run a command under the policy in BENCHPACK_SANDBOX_POLICY; 125 on bad input."""
    try:
        cwd, writable, read_only, env, command_argv = _parse(sys.argv[1:] if argv is None else argv)
        raw = os.environ.get(POLICY_ENV)
        if not raw:
            raise ValueError(f"{POLICY_ENV} is not set (the runner sets it for verifiers)")
        policy = json.loads(raw)
        if not isinstance(policy, dict) or policy.get("mode") not in MODES:
            raise ValueError(f"{POLICY_ENV}: mode must be one of {', '.join(MODES)}")
        full = command(policy, command_argv, cwd, writable, read_only, (), env)
    except ValueError as exc:  # BindRefused included; json.JSONDecodeError is a ValueError too
        print(f"benchpack sandbox: {exc}", file=sys.stderr)
        return 125
    if policy["mode"] == NONE:  # unsandboxed: the command itself runs here
        os.chdir(cwd)
    # bubblewrap: bwrap runs on the host from the caller's directory (never the candidate's);
    # it changes into `cwd` inside the sandbox (--chdir).
    try:
        os.execvpe(full[0], full, process_environment(policy, env))
    except OSError as exc:
        print(f"benchpack sandbox: cannot run {full[0]!r}: {exc.strerror or exc}", file=sys.stderr)
        return 127


if __name__ == "__main__":
    sys.exit(main())
