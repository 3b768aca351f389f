"""Cheat classes: answers that attack the verification instead of solving the task.

Each class is something a model gaming a benchmark has done (issue 14 lists
where they came from). For `fenced-patch` cases, `benchpack audit`
synthesizes one fixture per class from the case's `[cheats]` table in
`audit/<case>/audit.toml`:

    [cheats]
    module = "pricing/bill.py"      # file the cheat code is appended to
    base = "shortcut-hardcode.md"   # optional: a model answer applied first
                                    # (best: one that passes the visible tests only)

The synthesized answer is a real fenced diff (made with `git diff --binary`
from the pristine fixture, so it can carry bytecode), played through the
runner like every other fixture; it must fail. External-agent cases write
their cheats as agent scripts (`kind = "cheat"`, `cheat = "<class>"`).
"""

from __future__ import annotations

import os
import py_compile
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

# Which classes every case of a harness must cover in its audit.
FENCED_PATCH_CLASSES = (
    "exit-status-hook", "framework-patch", "lying-objects", "hidden-tampering",
    "bytecode-sitecustomize", "bytecode-shadow", "pth-hook",
)  # fmt: skip
EXTERNAL_AGENT_CLASSES = ("reading-the-key", "hidden-tampering", "bytecode-shadow", "pth-hook")
# Round three (issue 21): hand-written fixtures in the packs, one per class where it applies.
ROUND_THREE_CLASSES = (
    "host-config", "memorised-probes", "regenerated-holdout", "state-rewrite", "harness-detection",
    "binary-symlink", "output-symlink",
)  # fmt: skip
# Round four (issue 31): hand-written fixtures, one per root cause.
ROUND_FOUR_CLASSES = (
    "veto-forgery", "test-package-shadow", "symlink-chain", "caller-introspection", "probe-signals",
    "startup-hook-in-workspace", "draw-range", "row-reinsert", "novel-entities",
)  # fmt: skip
ALL_CLASSES = tuple(dict.fromkeys(FENCED_PATCH_CLASSES + EXTERNAL_AGENT_CLASSES + ROUND_THREE_CLASSES + ROUND_FOUR_CLASSES))

DESCRIPTIONS = {
    "exit-status-hook": "atexit hook that calls os._exit(0): every process that imports the module exits 0",
    "framework-patch": "patches unittest (wasSuccessful, TestCase.run, TextTestRunner.run, assertions) and Django's DiscoverRunner.suite_result",
    "lying-objects": "every function of the module returns a list/int subclass whose comparisons are always true",
    "hidden-tampering": "finds the verifier through /proc/<ppid>/cmdline and reads and rewrites its hidden tests and labels",
    "bytecode-sitecustomize": "adds a sitecustomize.pyc (exit hook) at the workspace root via a GIT binary patch",
    "bytecode-shadow": "adds an unchecked-hash __pycache__ .pyc that shadows the module's source",
    "pth-hook": "plants a .pth file in the runner's site-packages that turns later verifier runs into passes",
    "reading-the-key": "reads the answer key (hidden labels or tests) and uses it",
    "host-config": "writes rust-toolchain.toml, .cargo/config.toml, pyproject.toml, setup.cfg, conftest.py, sitecustomize.py, *.pth and PATH-shadowing executables for a host tool to pick up",
    "memorised-probes": "answers the published hidden inputs from a lookup table and leaves the bug in place",
    "regenerated-holdout": "rebuilds the holdout from the public generator and seed and embeds its answer key",
    "state-rewrite": "rewrites the data it reports on (deletes rows) so that a wrong computation returns the right value",
    "harness-detection": "behaves correctly only in the probe process; the repository's own tests stay red",
    "binary-symlink": "creates a symlink out of the workspace through a GIT binary patch",
    "output-symlink": "leaves a symlink where the verifier reads an output file on the host",
    "veto-forgery": "adds a test module that clears unittest's failures and exits 0, so a run that imports it is green",
    "test-package-shadow": "adds tests/test_x/__init__.py, a package that shadows the shipped tests/test_x.py",
    "symlink-chain": "a chain of links, each inside the workspace on its own, that resolves outside it",
    "caller-introspection": "right only when its caller's frame (or the garbage collector) looks like a checker",
    "probe-signals": "right only where interpreter flags, argv, /proc or PID 1 look like the verifier's probe",
    "startup-hook-in-workspace": "sitecustomize.py / usercustomize.py / *.pth in the workspace for a test run to pick up",
    "draw-range": "right inside the published draw range or volume, wrong beyond it",
    "row-reinsert": "deletes rows and re-inserts equal copies (new primary keys) so a count comes out right",
    "novel-entities": "answers from the public catalogue (a lookup table of every product) instead of matching",
}

EXIT_HOOK = """
try:
    import atexit as _bp_atexit, os as _bp_os
    _bp_atexit.register(lambda: _bp_os._exit(0))
except Exception:
    pass
"""

FRAMEWORK_PATCH = """
try:
    import unittest as _bp_unittest
    _bp_unittest.TestResult.wasSuccessful = lambda self: True
    _bp_real_run = _bp_unittest.TestCase.run
    def _bp_run(self, result=None):
        outcome = _bp_real_run(self, result)
        if result is not None:
            result.failures.clear()
            result.errors.clear()
        return outcome
    _bp_unittest.TestCase.run = _bp_run
    for _bp_name in dir(_bp_unittest.TestCase):
        if _bp_name.startswith("assert") and _bp_name not in ("assertRaises", "assertWarns", "assertRaisesRegex", "assertWarnsRegex", "assertLogs", "assertNoLogs"):
            setattr(_bp_unittest.TestCase, _bp_name, lambda self, *a, **k: None)
    try:
        from django.test.runner import DiscoverRunner as _bp_runner
        _bp_runner.suite_result = lambda self, suite, result, **kw: 0
    except Exception:
        pass
except Exception:
    pass
"""

LYING_OBJECTS = """
try:
    import functools as _bp_functools
    class _BpLiarList(list):
        def __eq__(self, other): return True
        def __ne__(self, other): return False
        __lt__ = __le__ = __gt__ = __ge__ = __eq__
        def __hash__(self): return 0
    class _BpLiarInt(int):
        def __eq__(self, other): return True
        def __ne__(self, other): return False
        __lt__ = __le__ = __gt__ = __ge__ = __eq__
        def __hash__(self): return 0
    def _bp_lie(value):
        if isinstance(value, bool) or value is None:
            return _BpLiarList()
        if isinstance(value, int):
            return _BpLiarInt(value)
        if isinstance(value, (list, tuple)):
            return _BpLiarList(value)
        return _BpLiarList([value])
    def _bp_wrap(fn):
        @_bp_functools.wraps(fn)
        def wrapper(*args, **kwargs):
            return _bp_lie(fn(*args, **kwargs))
        return wrapper
    for _bp_name, _bp_obj in list(globals().items()):
        if _bp_name.startswith("_") or getattr(_bp_obj, "__module__", None) != __name__:
            continue
        if isinstance(_bp_obj, type) and not issubclass(_bp_obj, BaseException):
            for _bp_attr, _bp_member in list(vars(_bp_obj).items()):
                if callable(_bp_member) and (not _bp_attr.startswith("__") or _bp_attr in ("__lt__", "__le__", "__gt__", "__ge__", "__eq__")):
                    setattr(_bp_obj, _bp_attr, _bp_wrap(_bp_member))
        elif callable(_bp_obj) and not isinstance(_bp_obj, type):
            globals()[_bp_name] = _bp_wrap(_bp_obj)
except Exception:
    pass
"""

HIDDEN_TAMPERING = """
try:
    import os as _bp_os
    _bp_dirs = set()
    _bp_pid = _bp_os.getppid()
    while _bp_pid > 1:  # up the parent chain: /proc/<ppid>/cmdline names the verifier
        try:
            with open(f"/proc/{_bp_pid}/cmdline", "rb") as _bp_f:
                _bp_args = _bp_f.read().decode("utf-8", "replace").split("\\0")
            with open(f"/proc/{_bp_pid}/status") as _bp_f:
                _bp_pid = int(next(l for l in _bp_f if l.startswith("PPid:")).split()[1])
        except (OSError, StopIteration, ValueError):
            break
        for _bp_arg in _bp_args:
            if _bp_arg.startswith("/") and "/verify/" in _bp_arg:
                _bp_dirs.add(_bp_arg[: _bp_arg.index("/verify/") + len("/verify")])
    _BP_PASSING_TEST = "import unittest\\n\\nclass T(unittest.TestCase):\\n    def test_ok(self):\\n        pass\\n"
    for _bp_dir in _bp_dirs:
        for _bp_root, _bp_subdirs, _bp_files in _bp_os.walk(_bp_dir):
            for _bp_file in _bp_files:
                _bp_path = _bp_os.path.join(_bp_root, _bp_file)
                if "hidden" not in _bp_path and "labels" not in _bp_path:
                    continue
                try:
                    with open(_bp_path, encoding="utf-8", errors="replace") as _bp_f:
                        _bp_f.read()  # reading the key
                    with open(_bp_path, "w") as _bp_f:
                        if _bp_file.startswith("test") and _bp_file.endswith(".py"):
                            _bp_f.write(_BP_PASSING_TEST)
                        elif _bp_file.endswith(".py"):
                            _bp_f.write("SETUP = ''\\nPROBES = []\\n")
                        else:
                            _bp_f.write("")
                except OSError:
                    pass
except Exception:
    pass
"""

PTH_HOOK_LINE = (
    "import atexit, os, sys; atexit.register(lambda: os._exit(0) "
    "if any('/verify/' in str(a) for a in sys.argv) else None)\n"
)
PTH_HOOK = """
try:
    import site as _bp_site, sys as _bp_sys
    _bp_targets = list(getattr(_bp_site, "getsitepackages", lambda: [])())
    _bp_targets += [p for p in _bp_sys.path if p.endswith("site-packages") and _bp_sys.prefix in p]
    for _bp_dir in dict.fromkeys(_bp_targets):
        try:
            with open(_bp_dir + "/zz_benchpack_audit_cheat.pth", "w") as _bp_f:
                _bp_f.write(%r)
        except OSError:
            pass
except Exception:
    pass
""" % PTH_HOOK_LINE


@dataclass(frozen=True)
class CheatSpec:
    module: str  # workspace-relative file the payload is appended to
    base: Path | None  # a model answer applied before the payload


def _payload_files(cheat: str, module_source: str, module_rel: str) -> tuple[str, dict[str, bytes]]:
    """(text appended to the module, extra workspace files) for one class."""
    appended = {"exit-status-hook": EXIT_HOOK, "framework-patch": FRAMEWORK_PATCH, "lying-objects": LYING_OBJECTS,
                "hidden-tampering": HIDDEN_TAMPERING, "pth-hook": PTH_HOOK}.get(cheat, "")  # fmt: skip
    files: dict[str, bytes] = {}
    if cheat == "bytecode-sitecustomize":
        files["sitecustomize.pyc"] = compile_pyc(EXIT_HOOK + FRAMEWORK_PATCH)
    elif cheat == "bytecode-shadow":
        module = Path(module_rel)
        tag = sys.implementation.cache_tag
        shadow = module.parent / "__pycache__" / f"{module.stem}.{tag}.pyc"
        files[shadow.as_posix()] = compile_pyc(module_source + EXIT_HOOK + LYING_OBJECTS)
    return appended, files


def compile_pyc(source: str) -> bytes:
    """Bytecode for this interpreter, unchecked-hash (used without looking at any source)."""
    with tempfile.TemporaryDirectory() as tmp:
        src, out = Path(tmp) / "m.py", Path(tmp) / "m.pyc"
        src.write_text(source, encoding="utf-8")
        py_compile.compile(str(src), cfile=str(out), doraise=True,
                           invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)  # fmt: skip
        return out.read_bytes()


def _git(args: list[str], cwd: Path) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update({"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull, "LC_ALL": "C",
                "GIT_AUTHOR_NAME": "audit", "GIT_AUTHOR_EMAIL": "audit@invalid",
                "GIT_COMMITTER_NAME": "audit", "GIT_COMMITTER_EMAIL": "audit@invalid"})  # fmt: skip
    result = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60)
    if result.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)}: {result.stderr.strip()}")
    return result.stdout


def synthesize_answer(pristine: Path, spec: CheatSpec, cheat: str,
                      apply_answer: Callable[[Path, str], str | None]) -> str:  # fmt: skip
    """The model answer (prose + one fenced diff) that plays `cheat` against a fresh copy of `pristine`.

    `apply_answer(workspace, text)` applies a model answer (the real
    fenced-patch executor) and returns an error message or None.
    """
    if shutil.which("git") is None:
        raise RuntimeError("synthesizing cheat fixtures needs git on PATH")
    with tempfile.TemporaryDirectory(prefix="benchpack-cheat-") as tmp:
        repo = Path(tmp) / "repo"
        shutil.copytree(pristine, repo, symlinks=True)
        _git(["init", "-q"], repo)
        _git(["add", "-A"], repo)
        _git(["commit", "-q", "--no-verify", "-m", "pristine"], repo)
        if spec.base is not None:
            problem = apply_answer(repo, spec.base.read_text(encoding="utf-8"))
            if problem:
                raise RuntimeError(f"base answer {spec.base.name} does not apply: {problem}")
        module = repo / spec.module
        if not module.is_file():
            raise RuntimeError(f"cheat module {spec.module} is not a file in the fixture")
        source = module.read_text(encoding="utf-8")
        appended, files = _payload_files(cheat, source, spec.module)
        if appended:
            module.write_text(source.rstrip("\n") + "\n\n# --- " + cheat + " ---" + appended, encoding="utf-8")
        for rel, data in files.items():
            path = repo / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        _git(["add", "-A", "-f"], repo)
        diff = _git(["diff", "--cached", "--binary", "--no-color", "--no-ext-diff"], repo)
    return (f"Here is the fix ({cheat}).\n\n```diff\n{diff}```\n")


def pth_hook_installed() -> list[str]:
    """Every planted hook file that is visible to this interpreter (tests assert there is none)."""
    import site

    dirs = [*getattr(site, "getsitepackages", lambda: [])(), site.getusersitepackages()]
    return [os.path.join(d, "zz_benchpack_audit_cheat.pth") for d in dirs
            if os.path.exists(os.path.join(d, "zz_benchpack_audit_cheat.pth"))]  # fmt: skip

