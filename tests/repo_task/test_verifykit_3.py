"""verifykit 3 (issue 31): scope patterns with path semantics; the shipped tests run exactly as
shipped and are read from a report, never an exit status; the shipped tests and the hidden probes
share one ordinary candidate process, so nothing the candidate can observe about its process tells
a probe from a shipped test; an answer that introspects its caller is "suspicious". Candidate code
runs in the real sandbox."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path

import pytest

from benchpack.repo_task import sandbox

pytestmark = pytest.mark.bubblewrap  # candidate code runs in the real sandbox

KIT_PATH = Path(__file__).resolve().parents[2] / "benchpack" / "repo_task" / "kits" / "verifykit_3" / "verifykit.py"
SHIPPED_TEST = """import unittest

from pkg.m import f


class FTest(unittest.TestCase):
    def test_one(self):
        self.assertEqual(f(1), 2)

    def test_two(self):
        self.assertEqual(f(2), 3)
"""


@pytest.fixture(scope="module")
def kit():
    spec = importlib.util.spec_from_file_location("verifykit3_under_test", KIT_PATH)
    module = importlib.util.module_from_spec(spec)
    sys.modules["verifykit3_under_test"] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(params=["bubblewrap", pytest.param("none", marks=pytest.mark.no_sandbox)])
def ctx(request, kit, tmp_path, monkeypatch):
    """A verifier context over a one-module workspace with one shipped test file."""
    policy = sandbox.make_policy(unsandboxed=request.param == "none", hidden=(tmp_path / "pack",),
                                 secret=(tmp_path / "pack" / "verify",), private_dir=tmp_path)  # fmt: skip
    for key, value in sandbox.verifier_environment(policy).items():
        monkeypatch.setenv(key, value)
    workspace, pristine = tmp_path / "ws", tmp_path / "pristine"
    for root in (workspace, pristine):
        (root / "pkg").mkdir(parents=True)
        (root / "tests").mkdir()
        (root / "pkg" / "__init__.py").write_text("")
        (root / "pkg" / "m.py").write_text("def f(x):\n    return x\n")
        (root / "tests" / "__init__.py").write_text("")
        (root / "tests" / "test_m.py").write_text(SHIPPED_TEST)
    return kit.Context(workspace=workspace, case="c", pack_id="p", pack_version="1", source_fixture_id="repo",
                       patch=tmp_path / "p.diff", output=tmp_path / "verify.json", pack_dir=tmp_path / "pack",
                       pristine=pristine, launcher=json.loads(os.environ[sandbox.LAUNCHER_ENV]), sandbox=request.param)  # fmt: skip


def write(ctx, rel, text):
    path = ctx.workspace / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def run(kit, ctx, probes=None, setup="from pkg.m import f"):
    probes = probes if probes is not None else [kit.Probe("p", "f(10)", 11)]
    return kit.check_python(ctx, setup=setup, probes=probes, tests=("tests/test_m.py",), timeout=30)


# -- scope patterns --------------------------------------------------------------------------


@pytest.mark.parametrize("path, pattern, matches", [
    ("tests/test_x.py", "tests/test_*.py", True),
    ("tests/test_x/__init__.py", "tests/test_*.py", False),  # a package cannot pass for a test module
    ("tests/sub/test_x.py", "tests/test_*.py", False),
    ("pricing/bill.py", "pricing/*.py", True),
    ("pricing/sub/bill.py", "pricing/*.py", False),
    ("sales/migrations/0002_x.py", "sales/migrations/**", True),
    ("a/b/c/d.py", "a/**/*.py", True),
    ("a/d.py", "a/**/*.py", True),
    ("tests/test_a.py", "tests/test_[ab].py", True),
    ("tests/test_/.py", "tests/test_?.py", False),
])  # fmt: skip
def test_scope_patterns_have_path_semantics(kit, path, pattern, matches):
    assert kit.glob_match(path, pattern) is matches


# -- the shipped tests run as shipped ----------------------------------------------------------


def test_the_shipped_test_ids_come_from_the_pristine_source(kit, ctx):
    assert kit.shipped_test_ids(ctx.pristine, ("tests/test_m.py",)) == ["tests.test_m.FTest.test_one", "tests.test_m.FTest.test_two"]


def test_right_code_passes_both_and_wrong_code_fails_both(kit, ctx):
    write(ctx, "pkg/m.py", "def f(x):\n    return x + 1\n")
    hidden, visible = run(kit, ctx)
    assert hidden.passed and visible.passed, (hidden.detail, visible.detail)
    write(ctx, "pkg/m.py", "def f(x):\n    return x\n")
    hidden, visible = run(kit, ctx)
    assert not hidden.passed and not visible.passed and "0 of 2" not in visible.detail


def test_an_added_test_module_that_forges_green_is_never_imported(kit, ctx):
    """Issue 31 item 2: a new test module registering an exit hook and clearing unittest's failures
    turned the old veto (the exit status of `unittest discover`) green."""
    write(ctx, "tests/test_zz.py", "import atexit, os, unittest\nunittest.TestResult.wasSuccessful = lambda self: True\n"
                                   "atexit.register(os._exit, 0)\nraise SystemExit(0)\n")  # fmt: skip
    write(ctx, "tests/conftest.py", "import os\nos._exit(0)\n")
    _, visible = run(kit, ctx)
    assert not visible.passed and "0/2 passed" in visible.detail
    assert kit.added_test_files(ctx, ("tests/test_m.py",)) >= {"tests/test_zz.py", "tests/conftest.py"}


def test_a_package_cannot_shadow_a_shipped_test_module(kit, ctx):
    write(ctx, "tests/test_m/__init__.py", "import unittest\nclass FTest(unittest.TestCase):\n"
                                           "    def test_one(self): pass\n    def test_two(self): pass\n")  # fmt: skip
    _, visible = run(kit, ctx)
    assert not visible.passed  # the shipped module ran, and f is still wrong
    assert "tests/test_m" in kit.added_test_files(ctx, ("tests/test_m.py",))


def test_the_exit_status_never_decides_and_a_patched_framework_is_seen(kit, ctx):
    write(ctx, "pkg/m.py", "import atexit, os, unittest\natexit.register(os._exit, 0)\n"
                           "unittest.TestCase.run = lambda self, result=None: None\ndef f(x):\n    return x\n")  # fmt: skip
    _, visible = run(kit, ctx)
    assert not visible.passed and "unittest was modified" in visible.detail


# -- item 1: a probe cannot be told from a shipped test ---------------------------------------

SIGNALS = r'''
import gc, os, sys
SEEN = []


def _read(path):
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError as exc:
        return repr(exc)


def _signals():
    expected, name = "".join(["EXPECTED-", "7f3a"]), "".join(["secret-probe-", "name"])  # not folded into a constant
    return {
        "flags": repr(sys.flags), "argv": list(sys.argv), "orig_argv": list(getattr(sys, "orig_argv", [])),
        "cmdline": _read("/proc/self/cmdline"), "pid": os.getpid(), "ppid": os.getppid(),
        "pid1": _read("/proc/1/cmdline"), "parent": _read(f"/proc/{os.getppid()}/cmdline"),
        "environ": sorted(os.environ.items()), "path": list(sys.path), "cwd": os.getcwd(),
        "executable": sys.executable, "main": getattr(sys.modules["__main__"], "__file__", None),
        "stdin": (sys.stdin.closed, sys.stdin.name), "fds": sorted(os.listdir("/proc/self/fd")),
        "hash_seed": hash("benchpack"), "modules": sorted(m for m in sys.modules if m.split(".")[0] in ("unittest", "tests", "pkg")),
        # probe data the process could find: an expected value, a probe name
        # (built at run time, so this module's own constants do not contain them)
        "expected_in_memory": any(isinstance(o, (dict, list, tuple)) and expected in repr(o) for o in gc.get_objects()),
        "probe_name_in_memory": any(isinstance(o, (dict, list, tuple)) and name in repr(o) for o in gc.get_objects()),
    }


def f(x):
    SEEN.append(_signals())
    return x + 1


def seen():
    return [sorted((k, repr(v)) for k, v in s.items()) for s in SEEN]
'''


def test_a_hidden_probe_and_a_shipped_test_see_the_same_process(kit, ctx):
    """Every signal issue 31 lists (interpreter flags, argv, PID 1, parent, environment) plus a few
    more is recorded by the candidate at the call in a shipped test and at the call in a probe: all
    identical, and neither the probe's expected value nor its name is anywhere in the process."""
    write(ctx, "pkg/m.py", SIGNALS)
    probes = [kit.Probe("secret-probe-name", "f(10)", 11), kit.Probe("marker", "f(0) and 'no'", "EXPECTED-7f3a"),
              kit.Probe("recorded", "seen()", kit.Satisfies(lambda value: True, "anything"))]  # fmt: skip
    hidden, visible = run(kit, ctx, probes, setup="from pkg.m import f, seen")
    assert visible.passed, visible.detail
    assert hidden.detail.startswith("2/3 hidden checks passed") and "marker" in hidden.detail
    records = [dict(items) for items in json.loads(json.dumps(_answers(kit, ctx, probes)))]
    assert len(records) == 4  # two shipped tests, two probes
    keys = set(records[0])
    assert {"flags", "argv", "orig_argv", "cmdline", "pid1", "parent", "environ"} <= keys
    for key in keys:
        assert records[0][key] == records[1][key] == records[2][key] == records[3][key], key
    assert records[3]["expected_in_memory"] == "False" and records[3]["probe_name_in_memory"] == "False"
    assert "'-I'" not in records[3]["orig_argv"]  # plain interpreter flags, like a developer's run
    assert records[3]["argv"] == repr(["python -m unittest", "tests.test_m"])  # as `python -m unittest` leaves it


def _answers(kit, ctx, probes):
    """Run once more and return the decoded answer of the `seen()` probe."""
    captured = {}
    real = kit._judge

    def spy(probe, answer):
        if probe.id == "recorded":
            captured["value"] = kit.decode(answer[1])
        return real(probe, answer)

    kit._judge = spy
    try:
        run(kit, ctx, probes, setup="from pkg.m import f, seen")
    finally:
        kit._judge = real
    return captured["value"]


# -- item 3: the introspection screen ----------------------------------------------------------


@pytest.mark.parametrize("line", [
    "import inspect", "caller = sys._getframe(1)", "import gc", "if sys.flags.isolated:", "open('/proc/1/cmdline')",
    "os.getppid()", "os.environ.get('PYTHONHASHSEED')", "import ctypes", "atexit.register(os._exit, 0)",
    "mod = __import__('sys')", "frame.f_back.f_locals", "sys.orig_argv",
])  # fmt: skip
def test_the_screen_marks_introspection_suspicious(kit, ctx, line):
    write(ctx, "pkg/m.py", f"import sys, os\n\ndef f(x):\n    {line}\n    return x + 1\n")
    check = kit.check_introspection(ctx)
    assert not check.passed and "pkg/m.py:4" in check.detail
    assert kit.finish(ctx) == 1
    document = json.loads(ctx.output.read_text())
    assert document["outcome"] == "suspicious" and document["suspicious"][0].startswith("pkg/m.py:4")


def test_the_screen_passes_ordinary_fixes_and_honours_allow(kit, ctx):
    write(ctx, "pkg/m.py", "import re\n\nPATTERN = re.compile(r'\\d+')  # compile is fine as a method\n\n"
                           "def f(x):\n    share, extra = divmod(x, 3)\n    return x + 1\n")  # fmt: skip
    assert kit.check_introspection(ctx).passed
    write(ctx, "pkg/m.py", "import sys\n\ndef main():\n    return sys.argv[1:]\n")
    assert not kit.check_introspection(ctx).passed
    assert kit.check_introspection(ctx, allow=("sys.argv",)).passed


def test_only_test_pickup_files_are_left_out_of_the_shipped_test_run(kit, ctx):
    """A new helper module (even one named test_*.py outside the test directory) is candidate code the
    fix may import; new files beside the shipped tests and startup hooks anywhere are left out."""
    write(ctx, "pkg/testing_helpers.py", "")
    write(ctx, "pkg/test_util.py", "")
    write(ctx, "tests/helper.py", "")
    write(ctx, "tests/sub/deep.py", "")
    write(ctx, "pkg/zz.pth", "")
    write(ctx, "pkg/sitecustomize.py", "")
    assert kit.added_test_files(ctx, ("tests/test_m.py",)) == {
        "tests/helper.py", "tests/sub/deep.py", "tests/sub", "pkg/zz.pth", "pkg/sitecustomize.py"}
