"""Shared checks for repo-task verifiers (an identical copy ships in every
bundled repo-task pack so each pack stays self-contained; a test keeps the
copies in sync).

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
* The repository's own (visible) tests run too, but only as a signal in the
  log (`gating: false`).
* Scope checks count every file: bytecode, build output, special files.

Outcome classes in the JSON: "pass", "fail" (the work is wrong) and "error"
(the evidence itself is missing or unusable, e.g. no workspace).
"""

from __future__ import annotations

import argparse
import fnmatch
import hashlib
import importlib.util
import json
import os
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
    _scratch: tempfile.TemporaryDirectory | None = None

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
    pack_dir = Path(__file__).resolve().parent.parent
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
    )


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
        with open(path, "rb") as handle:
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


def _matches(path: str, patterns: tuple[str, ...]) -> bool:
    return any(fnmatch.fnmatchcase(path, pattern) for pattern in patterns)


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


def copy_workspace(ctx: Context) -> Path:
    """A fresh scratch copy of the workspace for one candidate process: nothing it writes
    survives it, and no run can prepare the next one. Special files are not copied, and
    neither is bytecode (a planted `.pyc` must never shadow a source; scope fails it anyway)."""
    target = ctx.scratch_dir("ws") / "workspace"
    target.mkdir()
    for dirpath, dirnames, filenames in os.walk(ctx.workspace):
        source_dir = Path(dirpath)
        dest_dir = target / source_dir.relative_to(ctx.workspace)
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        filenames = [f for f in filenames if not f.endswith((".pyc", ".pyo"))]
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
                shutil.copy2(source, dest)
    return target


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
    if ctx.launcher:
        command = [*ctx.launcher, "--cwd", str(workdir), "--writable", str(scratch)]
        command += [x for p in writable for x in ("--writable", str(p))]
        command += [x for p in read_only for x in ("--read-only", str(p))]
        command += [x for k, v in (env or {}).items() for x in ("--env", f"{k}={v}")]
        command += ["--", *argv]
        process_env = dict(os.environ)
    else:  # run by hand, outside the runner: no sandbox, but the same cleaned environment
        command = list(argv)
        process_env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(ctx.scratch_dir("home")),
                       "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": "0", **(env or {})}  # fmt: skip
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        try:
            proc = subprocess.Popen(command, cwd=workdir, env=process_env, stdout=out, stderr=err,
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
    """`python -I -B` running `module` or `script` with `path` on sys.path (never PYTHONPATH)."""
    kind, target = ("module", module) if module else ("script", script)
    return [sys.executable, "-I", "-B", "-c", PYTHON_BOOT, kind, target, json.dumps(list(path)), *args]


def check_visible_tests(ctx: Context, argv: list[str], *, env: dict[str, str] | None = None,
                        timeout: float = 60.0) -> Check:  # fmt: skip
    """The repository's own tests: recorded as a signal, never the verdict (their exit
    status comes from a process that ran candidate code)."""
    run = run_candidate(ctx, argv, env=env, timeout=timeout)
    detail = f"exit {run.code} (a signal only: the verdict never comes from a candidate's exit status)\n{run.tail()}"
    return ctx.add(Check("visible-tests", run.code == 0, detail, gating=False))


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

PROBE = ENCODER + r'''
import os, sys
_request = _json.loads(sys.stdin.read())
sys.path[:0] = [os.path.abspath(p) for p in _request["path"]]
def _raised(exc):
    return ["raises", [f"{c.__module__}.{c.__qualname__}" for c in type(exc).__mro__], str(exc)[:200]]
_shared = {"__name__": "__probe__"}
try:
    exec(compile(_request["setup"], "<setup>", "exec"), _shared)
    _setup_error = None
except BaseException as exc:
    _setup_error = _raised(exc)
_answers = []
for _check in _request["checks"]:
    if _setup_error is not None:
        _answers.append([_check["id"], ["setup-failed", _setup_error]])
        continue
    _ns = dict(_shared)
    try:
        try:
            _code = compile(_check["code"], _check["id"], "eval")
        except SyntaxError:
            exec(compile(_check["code"], _check["id"], "exec"), _ns)
            _value = _ns.get("result")
        else:
            _value = eval(_code, _ns)
        _answers.append([_check["id"], ["value", encode(_value)]])
    except BaseException as exc:
        _answers.append([_check["id"], _raised(exc)])
sys.stdout.write("\n" + _request["nonce"] + _json.dumps(_answers) + _request["nonce"] + "\n")
sys.stdout.flush()
'''

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
    """Evaluate every probe in one sandboxed candidate process; judge the answers here.

    Passes only when exactly len(probes) answers came back, in order, each
    matching its expected value with exact builtin types.
    """
    nonce = secrets.token_hex(16)
    request = {"path": list(path), "setup": setup, "nonce": nonce,
               "checks": [{"id": p.id, "code": p.code} for p in probes]}  # fmt: skip
    run = run_candidate(ctx, [sys.executable, "-I", "-B", "-c", PROBE], stdin_text=json.dumps(request),
                        env=env, timeout=timeout)  # fmt: skip
    answers, problem = _parse_answers(run.stdout, nonce)
    failures: list[str] = []
    passed = 0
    if answers is not None:
        if len(answers) != len(probes):
            problem = f"{len(answers)} answers for {len(probes)} hidden checks"
        for probe, answer in zip(probes, answers):
            if not isinstance(answer, list) or len(answer) != 2 or answer[0] != probe.id:
                failures.append(f"{probe.id}: answer out of order or malformed")
                continue
            why = _judge(probe, answer[1])
            if why is None:
                passed += 1
            else:
                failures.append(f"{probe.id}: {why}")
    expected = len(probes)
    ok = answers is not None and not problem and passed == expected and expected > 0
    ctx.extra.setdefault("hidden", {})[check_id] = {"expected": expected, "passed": passed, "failures": failures[:50]}
    lines = [f"{passed}/{expected} hidden checks passed" + (f"; {problem}" if problem else "")]
    lines += failures[:MAX_LISTED_FAILURES]
    if len(failures) > MAX_LISTED_FAILURES:
        lines.append(f"(+{len(failures) - MAX_LISTED_FAILURES} more)")
    if answers is None or problem:
        lines.append(f"candidate process: exit {run.code}\n{run.tail()}")
    return ctx.add(Check(check_id, ok, "\n".join(lines)))


# -- verdict ---------------------------------------------------------------------


def finish(ctx: Context, extra: dict | None = None) -> int:
    """Write the verify JSON, print one line per check, exit status 0 iff every gating check passed."""
    gating = [c for c in ctx.checks if c.gating]
    passed = bool(gating) and all(c.passed for c in gating)
    errored = any(c.evidence_error for c in ctx.checks)
    document = {
        "case": ctx.case,
        "pack": {"id": ctx.pack_id, "version": ctx.pack_version},
        "sandbox": ctx.sandbox,
        "outcome": "pass" if passed else ("error" if errored else "fail"),
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
                             visible_tests: list[str], hidden: Path, path: tuple[str, ...] = (".",),
                             env: dict[str, str] | None = None, timeout: float = 60.0) -> int:  # fmt: skip
    """Evidence → something changed → scope → protected tests → hidden checks (first) → visible tests (signal).

    `hidden` is the case's `verify/hidden/<case>/checks.py`, defining SETUP
    (code run once in the candidate process) and PROBES (a list of Probe).
    """
    if check_evidence(ctx):
        check_changed(ctx)
        check_scope(ctx, allowed)
        check_protected(ctx, protected)
        checks = load_module(hidden, f"hidden_checks_{ctx.case.replace('-', '_')}")
        check_hidden(ctx, checks.SETUP, list(checks.PROBES), path=path, env=env, timeout=timeout)
        check_visible_tests(ctx, visible_tests, env=env, timeout=timeout)
    return finish(ctx)
