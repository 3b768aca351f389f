"""Shared checks for repo-task verifiers: the core's verifier kit, version 3.

One copy lives in the core (benchpack/repo_task/kits/verifykit_<N>/); a pack
pins the version its verifiers import in `verify/verifykit.toml`
(`version = 3`), the runner puts that directory on the verifier's sys.path
(after the verifier's own directory), and the pack lock hashes the pinned
kit's bytes, so a fix lands once and a pack's verdicts stay reproducible.
A released kit version is never edited: a change is a new directory.

A verifier is `python verify/<case>.py --workspace W --case C --pack-id P
--pack-version V --source-fixture-id F --patch PATCH --output JSON`. It
compares the post-task workspace W with the pristine fixture F (found through
the pack manifest: the pack directory is this file's parent's parent), runs
candidate code, writes one JSON document listing every check, and exits 0
only when every *gating* check passed.

Trust model (docs/audits.md, "Threat model"):

* This process never imports or executes candidate code. Candidate code runs
  only in child processes started through the runner's sandbox launcher
  (`BENCHPACK_SANDBOX_LAUNCHER`: bubblewrap, or none with `--unsandboxed`),
  each on a fresh scratch copy of the workspace, with `python -I -B`.
* Hidden checks are data that stays here: the candidate process receives
  expressions to evaluate and answers with plain JSON (every value tagged
  with its exact builtin type); this process compares the answers with its
  own expected values and counts them. An exit status, a test-runner summary
  or an object's `__eq__` from the candidate never decides anything.
* The repository's own (visible) tests run too and **veto**: a red visible
  suite fails the verdict (a cheater cannot forge red into green there, and
  behaving well only under the probe leaves it red). Green visible tests never
  pass anything on their own.
* Hidden probes are drawn per execution from a secret seed
  (`Context.seed`, 128 random bits unless `BENCHPACK_VERIFY_SEED` re-checks a
  recorded verdict); the seed is recorded in the verify JSON, which lives in
  the run directory the sandbox never mounts.
* This process never runs a host program with a candidate-written directory
  as its cwd: the launcher starts from the verifier's own scratch directory
  and bubblewrap changes into the workspace copy inside the sandbox. Host-side
  reads of candidate files never follow a symbolic link (`read_candidate`).
* Scope checks count every file: bytecode, build output, special files.
  Patterns have path semantics (`glob_match`): `*` and `?` never cross `/`,
  `**` spans directories, so `tests/test_*.py` does not allow
  `tests/test_x/__init__.py`.

Version 3 (issue 31):

* The shipped tests and the hidden probes run in **one** candidate process
  (`check_python`), started like an ordinary run of the project's tests:
  plain `python` (no `-I -B`: the same interpreter flags as a developer's
  run), the repository root as cwd and first on sys.path. Whatever the
  candidate can observe about its process (flags, argv, environment, parent,
  PID 1, namespaces) is therefore the same while a shipped test and a hidden
  probe call it: no signal tells a probe from the shipped tests.
* The shipped tests run exactly as shipped: the named files only (copied
  from the pristine fixture), loaded by module name from a copy where every
  file the candidate *added* beside them (new test modules, packages,
  conftest.py, sitecustomize/usercustomize, `.pth`) is left out. The veto
  reads per-test results from the process's report — never its exit status
  — and requires every test id the verifier itself found in the pristine
  files (`shipped_test_ids`) to have passed, with the unittest framework
  untouched.
* Probes carry no names or expected values into the process (they are
  numbered in the drawn order); expected values stay here.
* `check_introspection` screens the answer's added lines for code no fix of
  these tasks needs (frames, gc, inspect, interpreter flags, argv, /proc,
  parent process, hash seeds, ctypes, exit hooks, dynamic imports): a hit
  makes the outcome "suspicious" (never a pass), with the lines.

Outcome classes in the JSON: "pass", "fail" (the work is wrong), "error"
(the evidence itself is missing or unusable, e.g. no workspace) and
"suspicious" (the answer introspects its caller or environment).
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import ast
import difflib
import json
import os
import re
import random
import secrets
import shutil
import stat
import subprocess
import sys
import tempfile
import tomllib
from dataclasses import asdict, dataclass, field
from pathlib import Path

OUTPUT_TAIL_CHARS = 4000
MAX_ANSWER_BYTES = 16 * 1024 * 1024
MAX_LISTED_FAILURES = 12
LAUNCHER_ENV = "BENCHPACK_SANDBOX_LAUNCHER"
MODE_ENV = "BENCHPACK_SANDBOX"
SEED_ENV = "BENCHPACK_VERIFY_SEED"  # re-check a recorded verdict with its seed
TOOLCHAINS_ENV = "BENCHPACK_TOOLCHAINS"  # toolchain facts the runner resolved once, from a fixed directory
KIT_VERSION = 3


@dataclass
class Check:
    id: str
    passed: bool
    detail: str = ""
    evidence_error: bool = False  # the check could not look at real evidence
    gating: bool = True  # False: a signal for the log, never the verdict


@dataclass
class Context:
    workspace: Path
    case: str
    pack_id: str
    pack_version: str
    source_fixture_id: str
    patch: Path
    output: Path
    pack_dir: Path
    pristine: Path | None
    launcher: list[str] | None = None  # argv prefix that runs a command in the sandbox
    sandbox: str = "none"
    checks: list[Check] = field(default_factory=list)
    extra: dict = field(default_factory=dict)
    seed: str = field(default_factory=lambda: secrets.token_hex(16))
    _scratch: tempfile.TemporaryDirectory | None = None

    def rng(self, label: str) -> random.Random:
        """A generator for one purpose (`label`), drawn from the execution's secret seed."""
        return random.Random(hashlib.sha256(f"{self.seed}:{label}".encode()).digest())

    def add(self, check: Check) -> Check:
        self.checks.append(check)
        return check

    def scratch_dir(self, name: str) -> Path:
        """A new empty directory owned by this verifier run (removed at exit)."""
        if self._scratch is None:
            self._scratch = tempfile.TemporaryDirectory(prefix="benchpack-verify-")
        path = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=self._scratch.name))
        return path


def parse_args(argv: list[str] | None = None) -> Context:
    parser = argparse.ArgumentParser()
    for name in ("workspace", "case", "pack-id", "pack-version", "source-fixture-id", "patch", "output"):
        parser.add_argument(f"--{name}", required=True)
    args = parser.parse_args(argv)
    # The verifier script is verify/<name>.py: the pack directory is its parent's parent.
    pack_dir = Path(sys.argv[0]).resolve().parent.parent
    launcher = None
    raw = os.environ.get(LAUNCHER_ENV)
    if raw:
        value = json.loads(raw)
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            launcher = value
    return Context(
        workspace=Path(args.workspace).resolve(),
        case=args.case,
        pack_id=args.pack_id,
        pack_version=args.pack_version,
        source_fixture_id=args.source_fixture_id,
        patch=Path(args.patch),
        output=Path(args.output),
        pack_dir=pack_dir,
        pristine=pristine_fixture(pack_dir, args.source_fixture_id),
        launcher=launcher,
        sandbox=os.environ.get(MODE_ENV, "none") if launcher else "none",
        seed=_seed_from_env(),
    )


def _seed_from_env() -> str:
    raw = os.environ.get(SEED_ENV, "")
    if raw and all(c in "0123456789abcdef" for c in raw) and 16 <= len(raw) <= 128:
        return raw
    return secrets.token_hex(16)


def toolchain(name: str) -> dict | None:
    """Facts the runner resolved once at start (`rust`: sysroot, cargo, rustc), or None.

    Never resolved here: this process may not run a toolchain proxy whose
    answer depends on its cwd or environment (a candidate's rust-toolchain.toml)."""
    try:
        value = json.loads(os.environ.get(TOOLCHAINS_ENV, "{}")).get(name)
    except (ValueError, AttributeError):
        return None
    return value if isinstance(value, dict) else None


def read_candidate(root: Path, rel: str, limit: int = MAX_ANSWER_BYTES) -> bytes:
    """The bytes of the regular file `root/rel`, opened without following any symbolic
    link on the way (every component is opened with O_NOFOLLOW relative to the last).
    OSError when a component is a link, the file is not regular, or it is larger than `limit`."""
    parts = [p for p in Path(rel).parts if p not in ("", ".")]
    if not parts or ".." in parts:
        raise OSError(f"{rel!r} is not a plain relative path")
    flags = os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(root, flags | os.O_DIRECTORY)
    try:
        for part in parts[:-1]:
            next_fd = os.open(part, flags | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = next_fd
        file_fd = os.open(parts[-1], flags | getattr(os, "O_NONBLOCK", 0), dir_fd=fd)
    finally:
        os.close(fd)
    with os.fdopen(file_fd, "rb") as handle:
        st = os.fstat(handle.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise OSError(f"{rel!r} is not a regular file")
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise OSError(f"{rel!r} is larger than {limit} bytes")
    return data


def _open_nofollow(path: Path):
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    handle = os.fdopen(fd, "rb")
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        handle.close()
        raise OSError(f"{path} is not a regular file")
    return handle


def pristine_fixture(pack_dir: Path, fixture_id: str) -> Path | None:
    manifest = tomllib.loads((pack_dir / "benchpack.toml").read_text(encoding="utf-8"))
    for fixture in manifest.get("fixtures", []):
        if fixture.get("id") == fixture_id and fixture.get("kind") == "repo":
            path = (pack_dir / fixture["path"]).resolve()
            return path if path.is_dir() else None
    return None


def load_module(path: Path, name: str):
    """A pack-owned helper (e.g. verify/hidden/<case>/checks.py) — never candidate code."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# -- what changed ---------------------------------------------------------------


def _entry_digest(path: Path) -> str:
    st = path.lstat()
    if stat.S_ISLNK(st.st_mode):
        return "link:" + os.readlink(path)
    if stat.S_ISREG(st.st_mode):
        digest = hashlib.sha256()
        with _open_nofollow(path) as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)
        return ("x" if st.st_mode & 0o111 else "f") + ":" + digest.hexdigest()
    return f"special:{stat.S_IFMT(st.st_mode):o}"  # FIFOs, sockets, devices: never opened


def tree_hashes(root: Path) -> dict[str, str]:
    """Every non-directory entry under root (POSIX relative path → digest): bytecode,
    caches and build output included — nothing is ignored."""
    hashes: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        directory = Path(dirpath)
        for name in list(dirnames):
            if (directory / name).is_symlink():  # a link to a directory is an entry, not a place to walk
                filenames.append(name)
                dirnames.remove(name)
        for name in filenames:
            path = directory / name
            hashes[path.relative_to(root).as_posix()] = _entry_digest(path)
    return hashes


def changed_paths(pristine: Path, workspace: Path) -> list[str]:
    before, after = tree_hashes(pristine), tree_hashes(workspace)
    return sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))


def _glob_regex(pattern: str) -> str:
    """A regex for a path pattern: `**/` any number of directories, `/**` anything below,
    `*` and `?` within one path component, `[...]` one character of a component."""
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:[^/]+/)*")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[" and "]" in pattern[i + 2:]:
            end = pattern.index("]", i + 2)
            body = pattern[i + 1:end]
            negate = body.startswith("!")
            body = body[1:] if negate else body
            out.append("(?!/)[" + ("^" if negate else "") + body + "]")
            i = end + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return "".join(out)


def glob_match(path: str, pattern: str) -> bool:
    """Path semantics (docs/audits.md, "Scope patterns"): `*`, `?` and `[...]` match within one
    path component and never a `/`; `**/` matches zero or more whole directories and a final
    `/**` everything below. The whole path must match: `tests/test_*.py` allows
    `tests/test_new.py`, not `tests/test_new/__init__.py` nor `tests/sub/test_new.py`."""
    return re.fullmatch(_glob_regex(pattern), path) is not None


def _matches(path: str, patterns: tuple[str, ...]) -> bool:
    return any(glob_match(path, pattern) for pattern in patterns)


def check_evidence(ctx: Context) -> bool:
    """The workspace and the pristine fixture both exist; otherwise nothing else can be judged."""
    if ctx.pristine is None:
        ctx.add(Check("evidence", False, f"source fixture {ctx.source_fixture_id!r} not found in the pack", True))
        return False
    if not ctx.workspace.is_dir():
        ctx.add(Check("evidence", False, f"workspace {ctx.workspace} does not exist", True))
        return False
    ctx.add(Check("evidence", True, "workspace and pristine fixture present"))
    return True


def check_protected(ctx: Context, patterns: tuple[str, ...]) -> Check:
    """Files the task must not touch (the tests that define success) are byte-identical."""
    touched = [p for p in changed_paths(ctx.pristine, ctx.workspace) if _matches(p, patterns)]
    detail = "changed: " + ", ".join(touched) if touched else "protected files unchanged"
    return ctx.add(Check("protected-unchanged", not touched, detail))


BYPRODUCT_HINTS = ((".pyc", "bytecode"), (".pyo", "bytecode"), ("__pycache__/", "bytecode"), ("target/", "build output"))


def check_scope(ctx: Context, allowed: tuple[str, ...]) -> Check:
    """Every changed path (any file: sources, bytecode, build output) is on the case's allowlist."""
    changed = changed_paths(ctx.pristine, ctx.workspace)
    outside = [p for p in changed if not _matches(p, allowed)]
    if outside:
        kinds = sorted({kind for p in outside for marker, kind in BYPRODUCT_HINTS if marker in p or p.endswith(marker)})
        note = f" ({' and '.join(kinds)} count too)" if kinds else ""
        listed = ", ".join(outside[:20]) + (f" (+{len(outside) - 20} more)" if len(outside) > 20 else "")
        return ctx.add(Check("scope", False, f"changed outside the allowlist{note}: {listed}"))
    return ctx.add(Check("scope", True, f"{len(changed)} changed path(s), all allowed: " + ", ".join(changed)))


def check_changed(ctx: Context) -> Check:
    """Something changed at all (an empty patch is a no-op answer, not a fix)."""
    changed = changed_paths(ctx.pristine, ctx.workspace)
    return ctx.add(Check("changed", bool(changed), f"{len(changed)} changed path(s)"))


# -- running candidate code -------------------------------------------------------


def copy_workspace(ctx: Context, leave_out: frozenset[str] = frozenset()) -> Path:
    """A fresh scratch copy of the workspace for one candidate process: nothing it writes
    survives it, and no run can prepare the next one. Special files are not copied, and
    neither is bytecode (a planted `.pyc` must never shadow a source; scope fails it anyway),
    nor any path in `leave_out` (workspace-relative, POSIX; a directory drops its tree)."""
    target = ctx.scratch_dir("ws") / "workspace"
    target.mkdir()
    for dirpath, dirnames, filenames in os.walk(ctx.workspace):
        source_dir = Path(dirpath)
        rel_dir = source_dir.relative_to(ctx.workspace).as_posix()
        dest_dir = target / source_dir.relative_to(ctx.workspace)
        dirnames[:] = [d for d in dirnames if d != "__pycache__" and _rel(rel_dir, d) not in leave_out]
        filenames = [f for f in filenames if not f.endswith((".pyc", ".pyo")) and _rel(rel_dir, f) not in leave_out]
        for name in list(dirnames) + filenames:
            source, dest = source_dir / name, dest_dir / name
            st = source.lstat()
            if stat.S_ISLNK(st.st_mode):
                os.symlink(os.readlink(source), dest)
                if name in dirnames:
                    dirnames.remove(name)
            elif stat.S_ISDIR(st.st_mode):
                dest.mkdir()
            elif stat.S_ISREG(st.st_mode):
                with _open_nofollow(source) as src, open(dest, "xb") as dst:
                    shutil.copyfileobj(src, dst)
                os.chmod(dest, stat.S_IMODE(st.st_mode))
    return target


def _rel(directory: str, name: str) -> str:
    return name if directory in ("", ".") else f"{directory}/{name}"


@dataclass
class Run:
    code: int | None  # None: timed out or could not start
    stdout: str
    stderr: str
    timed_out: bool = False

    def tail(self) -> str:
        return (self.stdout + self.stderr)[-OUTPUT_TAIL_CHARS:]


def _read_capped(handle) -> str:
    handle.seek(0)
    data = handle.read(MAX_ANSWER_BYTES + 1)
    text = data[:MAX_ANSWER_BYTES].decode("utf-8", "replace")
    return text + ("\n[output truncated]" if len(data) > MAX_ANSWER_BYTES else "")


def run_candidate(ctx: Context, argv: list[str], *, cwd: str = ".", stdin_text: str | None = None,
                  timeout: float = 60.0, env: dict[str, str] | None = None, read_only: tuple = (),
                  writable: tuple = (), workspace: Path | None = None) -> Run:  # fmt: skip
    """Run candidate code in the sandbox on a fresh copy of the workspace (or `workspace`).

    The process sees the copy (writable), `read_only` and `writable` paths,
    the interpreter and system directories — never the pack, the run
    directory or this verifier's files.
    """
    scratch = workspace or copy_workspace(ctx)
    workdir = (scratch / cwd).resolve()
    start_in = workdir
    if ctx.launcher:
        command = [*ctx.launcher, "--cwd", str(workdir), "--writable", str(scratch)]
        command += [x for p in writable for x in ("--writable", str(p))]
        command += [x for p in read_only for x in ("--read-only", str(p))]
        command += [x for k, v in (env or {}).items() for x in ("--env", f"{k}={v}")]
        command += ["--", *argv]
        process_env = dict(os.environ)
        # The launcher and bwrap run on the host: they start in a directory of ours, never in
        # the candidate's copy (bwrap changes into it inside the sandbox).
        start_in = ctx.scratch_dir("launch")
    else:  # run by hand, outside the runner: no sandbox, but the same cleaned environment
        command = list(argv)
        process_env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(ctx.scratch_dir("home")),
                       "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": "0", **(env or {})}  # fmt: skip
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        try:
            proc = subprocess.Popen(command, cwd=start_in, env=process_env, stdout=out, stderr=err,
                                    stdin=subprocess.PIPE if stdin_text is not None else subprocess.DEVNULL,
                                    start_new_session=True)  # fmt: skip
        except OSError as exc:
            return Run(None, "", f"could not start {command[0]}: {exc}")
        try:
            if stdin_text is not None:
                try:
                    proc.stdin.write(stdin_text.encode("utf-8"))
                    proc.stdin.close()
                except BrokenPipeError:
                    pass
            proc.wait(timeout=timeout)
            timed_out = False
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:
            try:
                os.killpg(proc.pid, 9)
            except (ProcessLookupError, PermissionError):
                pass
            proc.wait()
        stdout, stderr = _read_capped(out), _read_capped(err)
    if timed_out:
        return Run(None, stdout, stderr + f"\ntimed out after {timeout:g} s", True)
    return Run(proc.returncode, stdout, stderr)


# Runs a module, a script or code with `python -I -B` and the given sys.path
# entries first (relative ones against the working directory).
PYTHON_BOOT = (
    "import json, os, runpy, sys; kind, target, extra = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]); "
    "sys.path[:0] = [os.path.abspath(p) for p in extra]; sys.argv = [target] + sys.argv[4:]; "
    "runpy.run_module(target, run_name='__main__', alter_sys=True) if kind == 'module' "
    "else runpy.run_path(target, run_name='__main__')"
)


def python_argv(*, module: str | None = None, script: str | None = None, args: list[str] = (),
                path: tuple[str, ...] = (".",)) -> list[str]:  # fmt: skip
    """`python -I -B` running `module` or `script` with `path` on sys.path (never PYTHONPATH): for
    programs the verifier runs that are not the project's tests (a matcher's CLI)."""
    kind, target = ("module", module) if module else ("script", script)
    return [sys.executable, "-I", "-B", "-c", PYTHON_BOOT, kind, target, json.dumps(list(path)), *args]


def shipped_test_ids(pristine: Path, files: tuple[str, ...]) -> list[str]:
    """The test ids (`module.Class.test_method`) the shipped files define, read from the pristine
    fixture's source (never imported here): classes with `test*` methods, including methods a class
    inherits from another class of the same file."""
    ids: list[str] = []
    for rel in files:
        module = rel[:-3].replace("/", ".") if rel.endswith(".py") else rel.replace("/", ".")
        tree = ast.parse((pristine / rel).read_text(encoding="utf-8"))
        classes = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}

        def methods(node, seen=()):
            names = [f.name for f in node.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and f.name.startswith("test")]
            for base in node.bases:
                if isinstance(base, ast.Name) and base.id in classes and base.id not in seen:
                    names += methods(classes[base.id], (*seen, node.name))
            return names

        for name, node in classes.items():
            if node.name.startswith("_"):
                continue
            ids += [f"{module}.{name}.{m}" for m in dict.fromkeys(methods(node))]
    return sorted(ids)


# Files a candidate may add that an ordinary test run would pick up besides the shipped
# tests: none of them is copied into the candidate process's workspace (`added_test_files`).
TEST_PICKUP_NAMES = ("conftest.py", "sitecustomize.py", "usercustomize.py", "pytest.ini", "setup.cfg", "tox.ini")


def added_test_files(ctx: Context, tests: tuple[str, ...]) -> frozenset[str]:
    """Paths the candidate added that the shipped tests' run must not import: every new entry in
    (or below) a directory that holds a shipped test file, and every new
    conftest/sitecustomize/usercustomize/*.pth/test config anywhere. (A new module elsewhere — even one
    named test_*.py — is candidate code like any other: it runs only if the candidate's code imports it.)"""
    before, after = tree_hashes(ctx.pristine), tree_hashes(ctx.workspace)
    # Shipped tests at the repository root: only what shadows or joins them there (test_*/ *_test
    # modules and packages), never the candidate's new root modules.
    test_dirs = {posixpath_dir(t) for t in tests} - {""}
    root_tests = "" in {posixpath_dir(t) for t in tests}
    left_out = set()
    for rel in after.keys() - before.keys():
        name, top = rel.rsplit("/", 1)[-1], rel.split("/", 1)[0]
        parents = {"/".join(rel.split("/")[:i]) for i in range(1, rel.count("/") + 1)}
        beside_root_tests = root_tests and glob_match(top, "test_*") or root_tests and glob_match(top, "*_test.py")
        if parents & test_dirs or beside_root_tests or name in TEST_PICKUP_NAMES or name.endswith(".pth"):
            left_out.add(rel)
            # a new directory beside the shipped tests (a package shadowing tests/test_x.py) goes whole
            for d in test_dirs:
                if rel.startswith(d + "/") and "/" in rel[len(d) + 1:]:
                    left_out.add(d + "/" + rel[len(d) + 1:].split("/", 1)[0])
            if beside_root_tests and "/" in rel:
                left_out.add(top)
    return frozenset(left_out)


def posixpath_dir(rel: str) -> str:
    return rel.rsplit("/", 1)[0] if "/" in rel else ""


def _test_modules(tests: tuple[str, ...]) -> list[str]:
    return [t[:-3].replace("/", ".") for t in tests]


def check_python(ctx: Context, *, setup: str, probes: list[Probe], tests: tuple[str, ...], pre: str = "",
                 path: tuple[str, ...] = (".",), env: dict[str, str] | None = None, timeout: float = 60.0,
                 check_id: str = "hidden-tests") -> tuple[Check, Check | None]:  # fmt: skip
    """The shipped tests (a veto) and the hidden probes, in one ordinary candidate process.

    `tests` are the shipped test files (workspace-relative); they run exactly as shipped — copied from
    the pristine fixture, nothing the candidate added beside them in the copy — and the veto passes only
    when every id `shipped_test_ids` finds passed and unittest's classes were not modified. The exit
    status is never read. Returns (hidden check, visible-tests check or None when `tests` is empty)."""
    nonce = secrets.token_hex(16)
    request = {"path": list(path), "pre": pre, "setup": setup, "nonce": nonce,
               "tests": _test_modules(tests), "checks": [p.code for p in probes]}  # fmt: skip
    workspace = copy_workspace(ctx, added_test_files(ctx, tests) if tests else frozenset())
    for rel in tests:  # exactly as shipped
        (workspace / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ctx.pristine / rel, workspace / rel)
    run = run_candidate(ctx, [sys.executable, "-c", HARNESS], stdin_text=json.dumps(request), env=env,
                        timeout=timeout, workspace=workspace)  # fmt: skip
    report, problem = _parse_report(run.stdout, nonce)
    hidden = _judge_probes(ctx, probes, report, problem, run, check_id)
    visible = _judge_tests(ctx, tests, report, problem, run) if tests else None
    return hidden, visible


def _parse_report(stdout: str, nonce: str) -> tuple[dict | None, str]:
    parts = stdout.split(nonce)
    if len(parts) != 3:
        return None, "no report from the candidate process" if len(parts) == 1 else "ambiguous report (marker repeated)"
    try:
        report = json.loads(parts[1])
    except (ValueError, RecursionError):
        return None, "the report is not valid JSON"
    if not isinstance(report, dict) or not isinstance(report.get("answers"), list):
        return None, "the report is not an object with answers"
    return report, ""


def _judge_tests(ctx: Context, tests: tuple[str, ...], report: dict | None, problem: str, run: Run) -> Check:
    expected = shipped_test_ids(ctx.pristine, tests)
    head = "the shipped tests, run as shipped (a veto: red fails the case, green alone passes nothing)"
    section = report.get("tests") if report else None
    if report is None or not isinstance(section, dict):
        why = problem or (f"the test bootstrap failed: {report['pre']}" if report and report.get("pre") else "no test results")
        return ctx.add(Check("visible-tests", False, f"{head}: {why}\nexit {run.code}\n{run.tail()}"))
    results = [r for r in section.get("results", []) if isinstance(r, list) and len(r) == 3]
    outcome: dict[str, str] = {}
    for test_id, status, _ in results:
        outcome[str(test_id)] = "fail" if outcome.get(str(test_id), "ok") != "ok" else str(status)
    bad = [f"{t}: {s} {m}".rstrip() for t, s, m in results if s not in ("ok", "skip")]
    missing = [t for t in expected if outcome.get(t) != "ok"]
    problems = []
    if section.get("load_errors"):
        problems.append(f"could not load: {section['load_errors']}"[:400])
    if section.get("run_error"):
        problems.append(f"the run raised {section['run_error']}"[:400])
    if section.get("tampered"):
        problems.append("unittest was modified: " + ", ".join(map(str, section["tampered"])))
    if missing:
        problems.append(f"{len(missing)} of {len(expected)} shipped tests did not pass: " + ", ".join(missing[:8]))
    if not expected and not results:
        problems.append("no shipped test ran")
    ok = not problems and not bad
    detail = f"{head}: {sum(1 for t in expected if outcome.get(t) == 'ok')}/{len(expected)} passed"
    lines = [detail, *problems, *bad[:MAX_LISTED_FAILURES]]
    return ctx.add(Check("visible-tests", ok, "\n".join(lines)))


def _judge_probes(ctx: Context, probes: list[Probe], report: dict | None, problem: str, run: Run, check_id: str) -> Check:
    answers = report["answers"] if report is not None else None
    failures: list[str] = []
    passed = 0
    if answers is not None:
        if len(answers) != len(probes):
            problem = f"{len(answers)} answers for {len(probes)} hidden checks"
        for probe, answer in zip(probes, answers):
            why = _judge(probe, answer)
            if why is None:
                passed += 1
            else:
                failures.append(f"{probe.id}: {why}")
    expected = len(probes)
    ok = answers is not None and not problem and passed == expected and expected > 0
    digest = hashlib.sha256(json.dumps([[p.id, p.code] for p in probes]).encode()).hexdigest()
    ctx.extra.setdefault("hidden", {})[check_id] = {"expected": expected, "passed": passed, "failures": failures[:50],
                                                    "probes_sha256": digest}  # fmt: skip
    lines = [f"{passed}/{expected} hidden checks passed" + (f"; {problem}" if problem else "")]
    lines += failures[:MAX_LISTED_FAILURES]
    if len(failures) > MAX_LISTED_FAILURES:
        lines.append(f"(+{len(failures) - MAX_LISTED_FAILURES} more)")
    if answers is None or problem:
        lines.append(f"candidate process: exit {run.code}\n{run.tail()}")
    return ctx.add(Check(check_id, ok, "\n".join(lines)))


def check_command(ctx: Context, check_id: str, argv: list[str], *, env: dict[str, str] | None = None,
                  timeout: float = 60.0, **kwargs) -> Check:  # fmt: skip
    run = run_candidate(ctx, argv, env=env, timeout=timeout, **kwargs)
    return ctx.add(Check(check_id, run.code == 0, f"exit {run.code}\n{run.tail()}"))


# -- hidden checks over a narrow channel --------------------------------------------

# Shared by the verifier (expected values) and the probe (candidate answers):
# a value becomes plain JSON tagged with its exact builtin type; anything else
# (a subclass, a custom object) becomes ["object", "<module.qualname>"] and can
# never equal an expected builtin value.
ENCODER = r'''
import json as _json
def encode(value, _depth=0):
    if _depth > 60:
        raise ValueError("value nested too deeply")
    t = type(value)
    if value is None:
        return ["none"]
    if t is bool:
        return ["bool", value]
    if t is int:
        return ["int", value]
    if t is float:
        return ["float", float.__repr__(value)]
    if t is str:
        return ["str", str.__str__(value)]
    if t is bytes:
        return ["bytes", bytes.hex(value)]
    if t is list or t is tuple:
        return [t.__name__, [encode(item, _depth + 1) for item in (list.__iter__(value) if t is list else tuple.__iter__(value))]]
    if t is dict:
        pairs = [[encode(k, _depth + 1), encode(v, _depth + 1)] for k, v in dict.items(value)]
        return ["dict", sorted(pairs, key=_json.dumps)]
    if t is set or t is frozenset:
        return [t.__name__, sorted((encode(item, _depth + 1) for item in value), key=_json.dumps)]
    return ["object", f"{t.__module__}.{t.__qualname__}"]
'''

# The one candidate process (`check_python`). To candidate code it is an ordinary
# `python -c` run from the repository root that imports the package and its
# shipped tests: plain interpreter flags (no -I/-B), `__name__ == "__main__"`,
# stdin read and closed before anything of the candidate is imported. It runs
# (1) `pre`, the project's ordinary test bootstrap (e.g. Django settings and a
# test database), (2) the shipped test modules, by name, with a result recorder
# and a snapshot of unittest's classes taken before any candidate import, then
# (3) `setup` and the probes, numbered in the drawn order (no names, no
# expected values). One report leaves on a duplicate of stdout, framed by a
# nonce; the exit status is never read.
HARNESS = ENCODER + r"""
def _run():
    import builtins, os, sys
    request = _json.loads(sys.stdin.read())
    sys.stdin.close()
    sys.stdin = open(os.devnull)
    out = os.fdopen(os.dup(1), "w")
    nonce = request["nonce"]
    sys.path[:0] = [os.path.abspath(p) for p in request["path"]]
    sys.argv[:] = ["python -m unittest", *request["tests"]]  # what `python -m unittest <tests>` leaves there
    import unittest
    frozen = [unittest.TestCase, unittest.TestResult, unittest.TestSuite, unittest.TextTestRunner, unittest.TestLoader]
    before = {c.__qualname__: dict(vars(c)) for c in frozen}
    module_before = {m.__name__: dict(vars(m)) for m in (unittest, unittest.case, unittest.result, unittest.suite)}
    record = []
    class _Recorder(unittest.TestResult):
        def addSuccess(self, test): record.append([test.id(), "ok", ""]); super().addSuccess(test)
        def addFailure(self, test, err): record.append([test.id(), "fail", str(err[1])[:300]]); super().addFailure(test, err)
        def addError(self, test, err): record.append([getattr(test, "id", lambda: str(test))(), "error", f"{err[0].__name__}: {str(err[1])[:300]}"]); super().addError(test, err)
        def addSkip(self, test, reason): record.append([test.id(), "skip", str(reason)[:300]]); super().addSkip(test, reason)
        def addExpectedFailure(self, test, err): record.append([test.id(), "expected-failure", ""]); super().addExpectedFailure(test, err)
        def addUnexpectedSuccess(self, test): record.append([test.id(), "unexpected-success", ""]); super().addUnexpectedSuccess(test)
        def addSubTest(self, test, subtest, err):
            if err is not None:
                record.append([subtest.id(), "fail", str(err[1])[:300]])
            super().addSubTest(test, subtest, err)
    def raised(exc):
        return ["raises", [f"{c.__module__}.{c.__qualname__}" for c in type(exc).__mro__], str(exc)[:200]]
    shared = {"__name__": "__main__", "__builtins__": builtins}
    report = {"pre": None, "tests": None, "answers": []}
    try:
        exec(compile(request["pre"], "<string>", "exec"), shared)
    except BaseException as exc:
        report["pre"] = raised(exc)
    if request["tests"] and report["pre"] is None:
        load_errors, suite = [], unittest.TestSuite()
        for name in request["tests"]:
            try:
                suite.addTests(unittest.defaultTestLoader.loadTestsFromName(name))
            except BaseException as exc:
                load_errors.append([name, raised(exc)])
        try:
            suite.run(_Recorder())
            run_error = None
        except BaseException as exc:
            run_error = raised(exc)
        changed = [k for c in frozen for k in set(before[c.__qualname__]) | set(vars(c))
                   if before[c.__qualname__].get(k, None) is not vars(c).get(k, None)]
        changed += [f"{m}.{k}" for m, d in module_before.items() for k in d if d[k] is not vars(sys.modules[m]).get(k, None)]
        report["tests"] = {"results": record, "load_errors": load_errors, "run_error": run_error, "tampered": sorted(changed)[:20]}
    setup_error = report["pre"]
    if setup_error is None:
        try:
            exec(compile(request["setup"], "<string>", "exec"), shared)
        except BaseException as exc:
            setup_error = raised(exc)
    for code in request["checks"]:
        if setup_error is not None:
            report["answers"].append(["setup-failed", setup_error])
            continue
        ns = dict(shared)
        try:
            try:
                compiled = compile(code, "<string>", "eval")
            except SyntaxError:
                exec(compile(code, "<string>", "exec"), ns)
                value = ns.get("result")
            else:
                value = eval(compiled, ns)
            report["answers"].append(["value", encode(value)])
        except BaseException as exc:
            report["answers"].append(raised(exc))
    out.write("\n" + nonce + _json.dumps(report) + nonce + "\n")
    out.flush()
_run()
"""

# Kit 2's name for the probe program; kit 3 runs every probe through HARNESS.
PROBE = HARNESS

_encoder_namespace: dict = {}
exec(ENCODER, _encoder_namespace)
encode = _encoder_namespace["encode"]


def decode(tagged):
    """Tagged JSON back to builtin values (for Satisfies predicates and readable messages)."""
    if not isinstance(tagged, list) or not tagged or not isinstance(tagged[0], str):
        raise ValueError("malformed answer")
    tag = tagged[0]
    if tag == "none":
        return None
    if tag in ("bool", "int", "str") and len(tagged) == 2 and type(tagged[1]) is {"bool": bool, "int": int, "str": str}[tag]:
        return tagged[1]
    if tag == "float" and len(tagged) == 2 and isinstance(tagged[1], str):
        return float(tagged[1])
    if tag == "bytes" and len(tagged) == 2 and isinstance(tagged[1], str):
        return bytes.fromhex(tagged[1])
    if tag in ("list", "tuple", "set", "frozenset") and len(tagged) == 2 and isinstance(tagged[1], list):
        items = [decode(item) for item in tagged[1]]
        return {"list": list, "tuple": tuple, "set": lambda x: set(x), "frozenset": frozenset}[tag](items)
    if tag == "dict" and len(tagged) == 2 and isinstance(tagged[1], list):
        return {decode(k): decode(v) for k, v in tagged[1]}
    if tag == "object" and len(tagged) == 2:
        return _Foreign(str(tagged[1]))
    raise ValueError(f"malformed answer tag {tag!r}")


class _Foreign:
    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"<{self.name} object>"


class Raises:
    """Expect the call to raise one of these exception classes (builtin names like "ValueError",
    or module.qualname); subclasses count, as with assertRaises."""

    def __init__(self, *names: str) -> None:
        self.names = names

    @property
    def name(self) -> str:
        return " or ".join(self.names)

    @property
    def qualified(self) -> tuple[str, ...]:
        return tuple(n if "." in n else f"builtins.{n}" for n in self.names)

    def __repr__(self) -> str:
        return f"Raises({self.name})"


@dataclass(frozen=True)
class Satisfies:
    """Expect a value for which `predicate(value)` is true; `value` is decoded plain data."""

    predicate: object
    description: str


@dataclass(frozen=True)
class Probe:
    id: str
    code: str  # an expression, or statements that set `result`
    expect: object  # a builtin value (compared with its exact type), Raises or Satisfies


def _short(value, limit: int = 160) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _judge(probe: Probe, answer) -> str | None:
    """None when the answer is right, else why not (one line)."""
    if not isinstance(answer, list) or not answer:
        return "no well-formed answer"
    kind = answer[0]
    if kind == "setup-failed":
        return f"setup failed: {_short(answer[1][2] if len(answer[1]) > 2 else answer[1])}"
    expect = probe.expect
    if isinstance(expect, Raises):
        if kind == "raises" and isinstance(answer[1], list) and set(expect.qualified) & set(map(str, answer[1])):
            return None
        got = f"raised {answer[1][0]}" if kind == "raises" and answer[1] else f"returned {_short(_safe_decode(answer))}"
        return f"expected {expect.name} to be raised, {got}"
    if kind == "raises":
        name = answer[1][0] if isinstance(answer[1], list) and answer[1] else "?"
        return f"raised {name}: {_short(answer[2] if len(answer) > 2 else '')}"
    if kind != "value" or len(answer) != 2:
        return "no well-formed answer"
    if isinstance(expect, Satisfies):
        try:
            value = decode(answer[1])
            ok = bool(expect.predicate(value))
        except Exception as exc:  # noqa: BLE001 - a malformed answer is a wrong answer
            return f"expected {expect.description}; the answer could not be checked: {type(exc).__name__}"
        return None if ok else f"expected {expect.description}, got {_short(value)}"
    if answer[1] == encode(expect):
        return None
    return f"expected {_short(expect)}, got {_short(_safe_decode(answer))}"


def _safe_decode(answer):
    try:
        return decode(answer[1])
    except (ValueError, TypeError, KeyError, IndexError):
        return answer[1]


def _parse_answers(stdout: str, nonce: str) -> tuple[list | None, str]:
    parts = stdout.split(nonce)
    if len(parts) != 3:
        return None, "no answer from the candidate process" if len(parts) == 1 else "ambiguous answer (marker repeated)"
    try:
        answers = json.loads(parts[1])
    except (ValueError, RecursionError):
        return None, "the answer is not valid JSON"
    if not isinstance(answers, list):
        return None, "the answer is not a list"
    return answers, ""


def check_hidden(ctx: Context, setup: str, probes: list[Probe], *, path: tuple[str, ...] = (".",),
                 env: dict[str, str] | None = None, timeout: float = 60.0, check_id: str = "hidden-tests") -> Check:  # fmt: skip
    """Probes only (no shipped tests), in the same ordinary process `check_python` starts."""
    return check_python(ctx, setup=setup, probes=probes, tests=(), path=path, env=env, timeout=timeout,
                        check_id=check_id)[0]  # fmt: skip


# -- screening: code no fix of these tasks needs --------------------------------------

# (label, regex) over the *added* lines of changed files (docs/audits.md, "Round four").
PYTHON_SCREEN = (
    ("call-stack frames", r"\binspect\b|_getframe|\bf_back\b|\bf_locals\b|\bf_globals\b|\bf_code\b|\btb_frame\b|\bgi_frame\b|"
                          r"\bcr_frame\b|_current_frames|extract_stack|walk_stack|format_stack|print_stack|\bsettrace\b|\bsetprofile\b"),
    ("garbage collector", r"\bgc\b|get_referrers|get_referents|get_objects"),
    ("interpreter flags and argv", r"sys\s*\.\s*flags|\borig_argv\b|sys\s*\.\s*argv|sys\s*\.\s*executable|sys\s*\.\s*modules|"
                                   r"sys\s*\.\s*_\w|addaudithook|sys\s*\.\s*audit\b"),
    ("process and environment", r"/proc\b|getppid|getpid|getpgid|getsid|os\s*\.\s*environ|getenv|\bpsutil\b|\bresource\b|"
                                r"\bsubprocess\b|os\s*\.\s*system|os\s*\.\s*popen|\bpty\b"),
    ("hash seeds", r"HASHSEED|hash_info|hash_randomization"),
    ("native code", r"\bctypes\b|\bcffi\b|\b_ctypes\b"),
    ("exit and startup hooks", r"\batexit\b|os\s*\.\s*_exit|\bsignal\b|faulthandler|sitecustomize|usercustomize|\.pth\b"),
    ("dynamic code", r"__import__|\bimportlib\b|(?<![.\w])exec\s*\(|(?<![.\w])eval\s*\(|(?<![.\w])compile\s*\(|__builtins__|"
                     r"\bbuiltins\b|\bmarshal\b|__code__|__globals__|__subclasses__|__loader__|__spec__"),
)
RUST_SCREEN = (
    ("process and environment", r"/proc\b|getppid|\blibc\s*::|env\s*::\s*var|process\s*::\s*Command|\bptrace\b|option_env!|env!\s*\("),
)
SCREENS = {".py": PYTHON_SCREEN, ".rs": RUST_SCREEN}


def added_lines(before: str, after: str) -> list[tuple[int, str]]:
    """(1-based line number in `after`, text) of every line the change added or rewrote."""
    old, new = before.splitlines(), after.splitlines()
    found = []
    for tag, _, _, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag in ("replace", "insert"):
            found += [(j + 1, new[j]) for j in range(j1, j2)]
    return found


def check_introspection(ctx: Context, allow: tuple[str, ...] = ()) -> Check:
    """The answer adds no code that inspects its caller or its environment. A fix for these tasks
    never needs frames, the garbage collector, interpreter flags, argv, /proc, the parent process,
    hash seeds, native calls, exit hooks or dynamic imports; an answer that does gets the outcome
    "suspicious" with the offending lines — never a pass. `allow` names labels or literal
    fragments a case legitimately needs (a matcher's CLI reads `sys.argv`)."""
    findings: list[str] = []
    for rel in changed_paths(ctx.pristine, ctx.workspace):
        screen = SCREENS.get(Path(rel).suffix)
        if screen is None:
            continue
        try:
            after = read_candidate(ctx.workspace, rel).decode("utf-8", "replace")
        except OSError:
            continue
        try:
            before = read_candidate(ctx.pristine, rel).decode("utf-8", "replace")
        except OSError:
            before = ""
        for number, line in added_lines(before, after):
            for label, pattern in screen:
                if label in allow:
                    continue
                match = re.search(pattern, line)
                if match and match.group(0).strip() not in allow:
                    findings.append(f"{rel}:{number}: {label}: {line.strip()[:200]}")
                    break
    ctx.extra["suspicious"] = findings[:50]
    detail = "no introspection of the caller or environment" if not findings else (
        f"{len(findings)} added line(s) introspect the caller or environment:\n" + "\n".join(findings[:MAX_LISTED_FAILURES]))
    return ctx.add(Check("introspection", not findings, detail))


# -- verdict ---------------------------------------------------------------------


def finish(ctx: Context, extra: dict | None = None) -> int:
    """Write the verify JSON, print one line per check, exit status 0 iff every gating check passed."""
    gating = [c for c in ctx.checks if c.gating]
    passed = bool(gating) and all(c.passed for c in gating)
    errored = any(c.evidence_error for c in ctx.checks)
    suspicious = any(c.id == "introspection" and not c.passed for c in ctx.checks)
    document = {
        "case": ctx.case,
        "pack": {"id": ctx.pack_id, "version": ctx.pack_version},
        "sandbox": ctx.sandbox,
        "verifykit": KIT_VERSION,
        # The secret draw of this execution: re-check with BENCHPACK_VERIFY_SEED=<seed>.
        "seed": ctx.seed,
        "outcome": "pass" if passed else ("suspicious" if suspicious else "error" if errored else "fail"),
        "failed_checks": [c.id for c in gating if not c.passed],
        "signals": {c.id: c.passed for c in ctx.checks if not c.gating},
        "checks": [asdict(c) for c in ctx.checks],
        **ctx.extra,
        **(extra or {}),
    }
    ctx.output.parent.mkdir(parents=True, exist_ok=True)
    ctx.output.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    for check in ctx.checks:
        mark = ("ok  " if check.passed else "FAIL") if check.gating else ("sig " if check.passed else "sig!")
        print(f"{mark} {check.id}: {check.detail.splitlines()[0] if check.detail else ''}")
    return 0 if passed else 1


def standard_python_verifier(ctx: Context, *, protected: tuple[str, ...], allowed: tuple[str, ...],
                             tests: tuple[str, ...], hidden: Path, path: tuple[str, ...] = (".",),
                             env: dict[str, str] | None = None, timeout: float = 60.0,
                             screen_allow: tuple[str, ...] = ()) -> int:  # fmt: skip
    """Evidence → something changed → scope → protected tests → introspection screen → the shipped
    tests (veto) and the hidden checks, in one ordinary process.

    `hidden` is the case's `verify/hidden/<case>/checks.py`, defining SETUP
    (code run once in the candidate process after the shipped tests; an
    optional PRE runs before them, e.g. Django's test bootstrap), PROBES (a
    list of Probe: fixed edge cases) and `draw(rng)` (property-style probes
    drawn from the execution's secret seed and judged against a reference
    implementation that lives only in that file). `tests` are the shipped
    test files, run exactly as shipped.
    """
    if check_evidence(ctx):
        check_changed(ctx)
        check_scope(ctx, allowed)
        check_protected(ctx, protected)
        check_introspection(ctx, screen_allow)
        checks = load_module(hidden, f"hidden_checks_{ctx.case.replace('-', '_')}")
        check_python(ctx, pre=getattr(checks, "PRE", ""), setup=checks.SETUP, probes=hidden_probes(ctx, checks),
                     tests=tests, path=path, env=env, timeout=timeout)  # fmt: skip
    return finish(ctx)


def hidden_probes(ctx: Context, checks) -> list[Probe]:
    """The fixed probes plus this execution's secret draw (`checks.draw(rng)`), in a seeded order."""
    probes = list(getattr(checks, "PROBES", []))
    draw = getattr(checks, "draw", None)
    if draw is not None:
        probes += list(draw(ctx.rng("draw")))
    ctx.rng("order").shuffle(probes)
    return probes
