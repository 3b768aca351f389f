"""verifykit (the core's versioned verifier kit, pinned by every bundled repo-task pack): hidden
checks over a narrow JSON channel, judged in the verifier with exact builtin types; every file
counts for scope; red visible tests veto. Candidate code runs in the real sandbox."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path

import pytest

from benchpack.packs.loader import bundled_packs_dir
from benchpack.repo_task import sandbox

pytestmark = pytest.mark.bubblewrap  # candidate code runs in the real sandbox

KIT_PATH = Path(__file__).resolve().parents[2] / "benchpack" / "repo_task" / "kits" / "verifykit_2" / "verifykit.py"


@pytest.fixture(scope="module")
def kit():
    spec = importlib.util.spec_from_file_location("verifykit_under_test", KIT_PATH)
    module = importlib.util.module_from_spec(spec)
    sys.modules["verifykit_under_test"] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(params=["bubblewrap", pytest.param("none", marks=pytest.mark.no_sandbox)])
def ctx(request, kit, tmp_path, monkeypatch):
    """A verifier context over a one-module workspace, with the runner's launcher environment."""
    policy = sandbox.make_policy(unsandboxed=request.param == "none", hidden=(tmp_path / "pack",),
                                 secret=(tmp_path / "pack" / "verify",), private_dir=tmp_path)  # fmt: skip
    for key, value in sandbox.verifier_environment(policy).items():
        monkeypatch.setenv(key, value)
    workspace, pristine = tmp_path / "ws", tmp_path / "pristine"
    for root in (workspace, pristine):
        (root / "pkg").mkdir(parents=True)
        (root / "pkg" / "__init__.py").write_text("")
    context = kit.Context(workspace=workspace, case="c", pack_id="p", pack_version="1", source_fixture_id="repo",
                          patch=tmp_path / "p.diff", output=tmp_path / "verify.json", pack_dir=tmp_path / "pack",
                          pristine=pristine, launcher=json.loads(os.environ[sandbox.LAUNCHER_ENV]),
                          sandbox=request.param)  # fmt: skip
    return context


def module(ctx, source):
    (ctx.workspace / "pkg" / "m.py").write_text(source)


def hidden(kit, ctx, probes, setup="from pkg.m import *"):
    return kit.check_hidden(ctx, setup, probes, timeout=30)


def test_it_accepts_right_answers_with_their_exact_types(kit, ctx):
    module(ctx, "def f(x):\n    return [(x, x + 1)], {'k': x}, x > 0, None, 1.5\n")
    check = hidden(kit, ctx, [kit.Probe("one", "f(1)", ([(1, 2)], {"k": 1}, True, None, 1.5)),
                              kit.Probe("raises", "f('a')", kit.Raises("TypeError"))])
    assert check.passed, check.detail
    assert check.detail.startswith("2/2 hidden checks passed")
    record = dict(ctx.extra["hidden"]["hidden-tests"])
    assert len(record.pop("probes_sha256")) == 64
    assert record == {"expected": 2, "passed": 2, "failures": []}


@pytest.mark.parametrize("body, why", [
    ("return [[1, 2]]", "expected [(1, 2)], got [[1, 2]]"),            # a list is not a tuple
    ("return [(True, 2)]", "expected [(1, 2)], got [(True, 2)]"),      # a bool is not an int
    ("return [(1.0, 2)]", "expected [(1, 2)], got [(1.0, 2)]"),        # a float is not an int
])  # fmt: skip
def test_it_compares_answers_with_exact_builtin_types(kit, ctx, body, why):
    module(ctx, f"def f():\n    {body}\n")
    check = hidden(kit, ctx, [kit.Probe("f", "f()", [(1, 2)])])
    assert not check.passed and why in check.detail


def test_it_is_not_fooled_by_objects_that_lie_about_equality(kit, ctx):
    module(ctx, """\
class Liar(list):
    def __eq__(self, other): return True
    def __ne__(self, other): return False
class LyingInt(int):
    def __eq__(self, other): return True
def f():
    return Liar([9])
def g():
    return LyingInt(9)
""")
    check = hidden(kit, ctx, [kit.Probe("list", "f()", [1, 2]), kit.Probe("int", "g()", 3)])
    assert not check.passed
    assert "got <pkg.m.Liar object>" in check.detail and "got <pkg.m.LyingInt object>" in check.detail


@pytest.mark.parametrize("hook", [
    "import atexit, os\natexit.register(lambda: os._exit(0))",                 # exit status hook: ignored
    "import unittest\nunittest.TestResult.wasSuccessful = lambda self: True",  # framework patch: irrelevant
])  # fmt: skip
def test_an_exit_status_or_framework_hook_changes_nothing(kit, ctx, hook):
    module(ctx, hook + "\ndef f():\n    return 1\n")
    check = hidden(kit, ctx, [kit.Probe("f", "f()", 2)])
    assert not check.passed and "expected 2, got 1" in check.detail


def test_a_candidate_that_exits_before_answering_answers_nothing(kit, ctx):
    module(ctx, "import os\nos._exit(0)\n")
    check = hidden(kit, ctx, [kit.Probe("f", "1", 1)])
    assert not check.passed and "0/1 hidden checks passed; no answer from the candidate process" in check.detail


def test_a_candidate_that_forges_a_second_answer_block_is_ambiguous(kit, ctx):
    module(ctx, "import json, sys\nf = sys._getframe()\nwhile 'request' not in f.f_locals:\n    f = f.f_back\n"
                "n = f.f_locals['request']['nonce']\nprint(n + json.dumps([['f', ['value', ['int', 2]]]]) + n)\n")
    check = hidden(kit, ctx, [kit.Probe("f", "1", 2)])
    assert not check.passed and "ambiguous answer" in check.detail


def test_the_count_of_answers_must_match_the_checks(kit, ctx):
    module(ctx, "import sys\nf = sys._getframe()\nwhile 'request' not in f.f_locals:\n    f = f.f_back\nf.f_locals['request']['checks'].pop()\n")
    check = hidden(kit, ctx, [kit.Probe("a", "1", 1), kit.Probe("b", "2", 2)])
    assert not check.passed and "1 answers for 2 hidden checks" in check.detail


def test_a_setup_that_fails_fails_every_check(kit, ctx):
    module(ctx, "raise ImportError('broken')\n")
    check = hidden(kit, ctx, [kit.Probe("a", "1", 1), kit.Probe("b", "2", 2)])
    assert not check.passed and check.detail.count("setup failed") == 2


def test_raises_accepts_subclasses_and_alternatives_but_not_a_value(kit, ctx):
    module(ctx, "class Bad(ValueError):\n    pass\ndef f(x):\n    if x:\n        raise Bad(x)\n    return 0\n")
    check = hidden(kit, ctx, [kit.Probe("sub", "f(1)", kit.Raises("ValueError")),
                              kit.Probe("alt", "f(1)", kit.Raises("TypeError", "ValueError")),
                              kit.Probe("value", "f(0)", kit.Raises("ValueError"))])  # fmt: skip
    assert not check.passed and "1 hidden" not in check.detail
    assert ctx.extra["hidden"]["hidden-tests"]["failures"] == ["value: expected ValueError to be raised, returned 0"]


def test_satisfies_sees_plain_decoded_values(kit, ctx):
    module(ctx, "def page():\n    return (200, '<b>ok</b>')\n")
    seen = []
    check = hidden(kit, ctx, [kit.Probe("p", "page()", kit.Satisfies(lambda v: seen.append(v) or v[0] == 200, "200"))])
    assert check.passed and seen == [(200, "<b>ok</b>")] and type(seen[0]) is tuple


def test_the_candidate_never_sees_the_pack_or_keeps_what_it_writes(kit, ctx):
    (ctx.pack_dir / "verify").mkdir(parents=True)
    (ctx.pack_dir / "verify" / "key.txt").write_text("secret")
    module(ctx, f"import os\nopen('scribble.txt', 'w').write('x')\nSEEN = os.path.exists({str(ctx.pack_dir / 'verify' / 'key.txt')!r})\n")
    check = hidden(kit, ctx, [kit.Probe("seen", "SEEN", ctx.sandbox == "none")])
    assert check.passed, check.detail  # with bubblewrap the key is not there; without, nothing stops the read
    assert not (ctx.workspace / "scribble.txt").exists()  # it wrote into its own scratch copy


def test_scope_counts_bytecode_build_output_and_special_files(kit, ctx):
    ws = ctx.workspace
    (ws / "pkg" / "__pycache__").mkdir()
    (ws / "pkg" / "__pycache__" / "m.cpython-311.pyc").write_bytes(b"\0")
    (ws / "sitecustomize.pyc").write_bytes(b"\0")
    (ws / "target" / "debug").mkdir(parents=True)
    (ws / "target" / "debug" / "bin").write_bytes(b"\0")
    os.mkfifo(ws / "pipe")
    check = kit.check_scope(ctx, ("pkg/*.py",))
    assert not check.passed
    for path in ("pkg/__pycache__/m.cpython-311.pyc", "sitecustomize.pyc", "target/debug/bin", "pipe"):
        assert path in check.detail
    assert "(build output and bytecode count too)" in check.detail
    copy = kit.copy_workspace(ctx)
    assert not (copy / "pipe").exists() and not (copy / "sitecustomize.pyc").exists() and (copy / "pkg" / "__init__.py").exists()


def test_red_visible_tests_veto_a_case_whose_hidden_checks_pass(kit, ctx):
    module(ctx, "def f():\n    return 1\n")
    (ctx.workspace / "test_m.py").write_text("import unittest\nclass T(unittest.TestCase):\n    def test(self):\n        self.fail('no')\n")
    assert hidden(kit, ctx, [kit.Probe("f", "f()", 1)]).passed
    visible = kit.check_visible_tests(ctx, kit.python_argv(module="unittest", args=["test_m"]), timeout=30)
    assert visible.passed is False and visible.gating is True
    assert kit.finish(ctx) == 1
    document = json.loads(ctx.output.read_text())
    assert document["outcome"] == "fail" and document["failed_checks"] == ["visible-tests"]
    assert document["sandbox"] == ctx.sandbox and document["verifykit"] == 2 and document["seed"] == ctx.seed


def test_the_probe_process_looks_like_a_plain_python_c(kit, ctx):
    """What candidate code can see of the probe: argv ['-c'], __main__, only "<string>" code
    besides its own module, stdin already closed, no probe id or nonce in any global."""
    module(ctx, "import inspect, sys\n"
                "def seen():\n"
                "    frames = sorted({f.filename for f in inspect.stack()[1:]})\n"
                "    main = vars(sys.modules['__main__'])\n"
                "    text = repr(sorted((k, repr(v)[:200]) for k, v in main.items()))\n"
                "    return (sys.argv, frames, sys.stdin.read(), 'probe' in text.lower(), 'look-around' in text)\n")
    expected = (["-c"], ["<string>"], "", False, False)
    check = hidden(kit, ctx, [kit.Probe("look-around", "seen()", kit.Satisfies(lambda v: tuple(v) == expected, repr(expected)))])
    assert check.passed, check.detail


def test_no_bundled_pack_ships_its_own_verifykit_copy():
    assert sorted(bundled_packs_dir().glob("*/verify/verifykit.py")) == []
    pins = sorted(bundled_packs_dir().glob("*/verify/verifykit.toml"))
    assert len(pins) == 6 and all("version = 3" in p.read_text() for p in pins)


def test_a_seed_draws_the_same_probes_and_another_seed_different_ones(kit, ctx, monkeypatch):
    monkeypatch.setitem(sys.modules, "verifykit", kit)  # checks.py imports the kit by its name
    # Loaded in this process (the verifier itself runs under `python -B`): no bytecode beside the bundled
    # pack's file, which the packs' litter test would then find (tests/packs/test_coding_packs.py).
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    checks = kit.load_module(bundled_packs_dir() / "patch-from-failure" / "verify" / "hidden" / "fix-split-bill" / "checks.py",
                             "split_bill_checks_for_test")  # fmt: skip
    first = [(p.id, p.code) for p in kit.hidden_probes(ctx, checks)]
    again = [(p.id, p.code) for p in kit.hidden_probes(ctx, checks)]
    ctx.seed = "0" * 32
    other = [(p.id, p.code) for p in kit.hidden_probes(ctx, checks)]
    assert first == again and first != other
    assert {c for _, c in first} != {c for _, c in other}  # different inputs, not just a different order


def test_the_hidden_checks_live_only_in_the_verifier_directory():
    for pack in bundled_packs_dir().glob("*/verify/hidden"):
        fixtures = pack.parent.parent / "fixtures"
        names = {p.name for p in fixtures.rglob("*")}
        assert "checks.py" not in names
        assert all((case / "checks.py").is_file() for case in pack.iterdir())
    assert Path(KIT_PATH).parent.parent.name == "kits"


def test_read_candidate_never_follows_a_link_on_the_way(kit, tmp_path):
    root = tmp_path / "root"
    (root / "out").mkdir(parents=True)
    (tmp_path / "secret.csv").write_text("offer_id,cluster_id\n")
    (root / "out" / "ok.csv").write_text("fine")
    os.symlink(tmp_path / "secret.csv", root / "out" / "clusters.csv")
    os.symlink(tmp_path, root / "dirlink")
    assert kit.read_candidate(root, "out/ok.csv") == b"fine"
    for rel in ("out/clusters.csv", "dirlink/secret.csv", "../secret.csv", "out"):
        with pytest.raises(OSError):
            kit.read_candidate(root, rel)
