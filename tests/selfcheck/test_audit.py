"""`benchpack audit`: fixture manifests are validated, every fixture runs through
the real runner/executor/verifier, and a verdict mismatch is exit status 1."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from benchpack.selfcheck.audit import AuditFixture, AuditResult, fixture_answer, load_audit, missing_coverage, verdict_from_row
from benchpack.cli import main
from benchpack.errors import PackError
from benchpack.packs.loader import bundled_packs_dir, load_pack
from benchpack.repo_task.cheats import FENCED_PATCH_CLASSES
from benchpack.repo_task.executors import fenced_patch_text

pytestmark = pytest.mark.bubblewrap  # candidate code runs in the real sandbox

PACK = "patch-from-failure"
CASE = "fix-split-bill"


@pytest.fixture
def pack_copy(tmp_path):
    root = tmp_path / PACK
    shutil.copytree(bundled_packs_dir() / PACK, root)
    return root


def write_manifest(root, text):
    (root / "audit" / CASE / "audit.toml").write_text(text)


def test_it_refuses_a_repo_task_case_without_audit_fixtures(pack_copy, capsys):
    (pack_copy / "audit" / CASE / "audit.toml").unlink()
    assert main(["audit", str(pack_copy)]) == 2
    assert f"audit/{CASE}/audit.toml: missing" in capsys.readouterr().err


def test_it_lists_every_problem_in_a_bad_manifest(pack_copy):
    write_manifest(pack_copy, """
[[fixtures]]
id = "a"
kind = "lucky-guess"
expected = "maybe"
description = "x"
model_output = "../../../../etc/passwd"
[[fixtures]]
id = "b"
kind = "known-good"
expected = "pass"
description = "x"
agent = "known-good.md"
surprise = 1
""")
    with pytest.raises(PackError) as err:
        load_audit(load_pack(pack_copy))
    text = "\n".join(err.value.lines())
    for needle in ("fixtures[0].kind", "fixtures[0].expected", "fixtures[0].model_output: escapes",
                   "fixtures[1].surprise: unknown key", "fixtures[1].agent: not used", "fixtures[1].model_output: is required"):
        assert needle in text


def test_it_refuses_an_unknown_case_filter(capsys):
    assert main(["audit", PACK, "--case", "nope"]) == 2
    assert "'nope' is not a repo-task case" in capsys.readouterr().err


def test_it_reports_missing_coverage_per_case():
    fixtures = [AuditFixture("c", "g", "known-good", "pass", "", None, None, None),
                AuditFixture("c", "w", "missing-evidence", "fail", "", None, None, None),
                AuditFixture("c", "x", "cheat", "fail", "", None, None, None, "pth-hook")]
    assert missing_coverage(fixtures) == {"c": [
        "alternative-valid", "wrong", "shortcut", "collateral",
        "cheat exit-status-hook", "cheat framework-patch", "cheat lying-objects", "cheat hidden-tampering",
        "cheat bytecode-sitecustomize", "cheat bytecode-shadow",
    ]}
    agent = [AuditFixture("a", "g", "known-good", "pass", "", None, None, None, harness="external-agent")]
    assert [m for m in missing_coverage(agent)["a"] if m.startswith("cheat")] == [
        "cheat reading-the-key", "cheat hidden-tampering", "cheat bytecode-shadow", "cheat pth-hook"]


def test_it_synthesizes_one_cheat_fixture_per_class_from_the_cheats_table(pack_copy):
    # (the pack also lists hand-written cheat fixtures of the round-three classes; those are not synthesized)
    fixtures = [f for f in load_audit(load_pack(pack_copy)) if f.kind == "cheat" and f.cheat_spec is not None]
    assert [f.cheat for f in fixtures] == list(FENCED_PATCH_CLASSES)
    assert {f.failed_check for f in fixtures if f.cheat.startswith("bytecode")} == {"scope"}
    assert {f.failed_check for f in fixtures if not f.cheat.startswith("bytecode")} == {"hidden-tests"}
    pack = load_pack(pack_copy)
    answers = {f.cheat: fixture_answer(pack, f) for f in fixtures}
    assert "GIT binary patch" in answers["bytecode-sitecustomize"] and "b/sitecustomize.pyc" in answers["bytecode-sitecustomize"]
    assert "pricing/__pycache__/bill." in answers["bytecode-shadow"]
    assert "os._exit(0)" in answers["exit-status-hook"] and "wasSuccessful" in answers["framework-patch"]
    for cheat, answer in answers.items():  # each is a real answer the fenced-patch executor applies
        workspace = pack_copy.parent / f"ws-{cheat}"
        shutil.copytree(pack_copy / "fixtures" / "pricing-repo", workspace)
        result = fenced_patch_text(workspace, answer)
        assert result.stderr == "" and "Applied fenced diff block" in result.stdout, (cheat, result.stderr)
        assert "(1000, 3)" in (workspace / "pricing" / "bill.py").read_text()  # the base answer is in


def test_it_lists_every_problem_in_a_bad_cheats_table(pack_copy):
    manifest = pack_copy / "audit" / CASE / "audit.toml"
    text = manifest.read_text().replace('module = "pricing/bill.py"', 'module = "../outside.py"\nsurprise = 1')
    manifest.write_text(text.replace('base = "shortcut-hardcode.md"', 'base = "no-such-answer.md"'))
    with pytest.raises(PackError) as err:
        load_audit(load_pack(pack_copy))
    text = "\n".join(err.value.lines())
    for needle in ("cheats.surprise: unknown key", "cheats.module: must be a relative path inside the repo fixture",
                   "cheats.base: no-such-answer.md does not exist"):
        assert needle in text


def test_it_counts_a_guarded_write_as_a_failed_check(tmp_path):
    (tmp_path / "task.log").write_text("")
    row = {"ok": True, "scoring": {"mode": "verify-script", "passed": False}, "task": {"stderr_path": "task.log"},
           "repo_task": {"status": "failed", "guarded_writes": [{"phase": "verifier", "paths": ["/x"], "count": 1}],
                         "failure_reason": "guarded-path write: the verifier changed /x"}}
    actual, failed, note = verdict_from_row(row, tmp_path, None)
    assert (actual, failed) == ("fail", ("guarded-write",)) and "guarded-path write" in note


def private_environment(tmp_path) -> Path:
    """A throwaway venv whose site-packages reaches the project's through one path line: an
    unsandboxed audit's `.pth` cheat lands in it, never in the project's `.venv` (issue 31)."""
    import site
    import sysconfig
    import venv

    target = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False, symlinks=True).create(target)
    purelib = Path(sysconfig.get_path("purelib", vars={"base": str(target), "platbase": str(target)}))
    purelib.mkdir(parents=True, exist_ok=True)
    (purelib / "benchpack_project.pth").write_text("\n".join([*site.getsitepackages(), str(ROOT)]) + "\n")
    return target / "bin" / "python"


ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.no_sandbox
def test_it_rejects_every_cheat_without_a_sandbox_too(tmp_path):
    """--unsandboxed: no isolation, so the guard must catch what the sandbox would have stopped;
    the planted .pth never stays active. The audit runs on a copy of the pack with a private
    interpreter environment, and the project's site-packages and benchpacks/ stay untouched —
    not even written and restored (ctime) — while it runs (issue 31)."""
    import subprocess

    from tests import untouched

    before = untouched.snapshot()
    python = private_environment(tmp_path)
    pack = tmp_path / PACK
    shutil.copytree(bundled_packs_dir() / PACK, pack)
    (tmp_path / "home").mkdir()
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path / "home"), "LANG": "C.UTF-8",
           "PYTHONDONTWRITEBYTECODE": "1"}  # the private interpreter caches no bytecode in the project's .venv
    result = subprocess.run([str(python), "-m", "benchpack", "audit", str(pack), "--unsandboxed", "--json"],
                            capture_output=True, text=True, env=env, cwd=tmp_path, timeout=900)  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout)
    cheats = {f["fixture"]: f for f in report["fixtures"] if f["kind"] == "cheat"}
    # every synthesized class plus the pack's hand-written round-three and round-four fixtures, all rejected
    assert {f["cheat"] for f in cheats.values()} >= set(FENCED_PATCH_CLASSES) and all(f["ok"] for f in cheats.values())
    assert {"cheat-memorised-probes", "cheat-harness-detection", "cheat-binary-symlink", "cheat-veto-forgery",
            "cheat-symlink-chain", "cheat-probe-signals"} <= set(cheats)  # fmt: skip
    assert "guarded-write" in cheats["cheat-pth-hook"]["failed_checks"]
    assert "guarded-write" in cheats["cheat-hidden-tampering"]["failed_checks"]
    planted = list(tmp_path.glob("venv/lib/*/site-packages/zz_benchpack_audit_cheat.pth*"))
    assert planted and all(p.name.endswith(".disabled-by-benchpack") for p in planted)  # it landed there, disabled
    assert untouched.differences(before, untouched.snapshot()) == []


def test_it_needs_the_named_failed_check_for_an_ok_fail_verdict():
    fixture = AuditFixture("c", "s", "shortcut", "fail", "", None, None, "hidden-tests")
    assert AuditResult(fixture, "fail", ("hidden-tests",), "").ok
    assert not AuditResult(fixture, "fail", ("scope",), "").ok  # failed for the wrong reason
    assert not AuditResult(fixture, "pass", (), "").ok


def test_it_reads_the_verdict_from_the_row_and_the_verify_json(tmp_path):
    (tmp_path / "verify").mkdir()
    (tmp_path / "verify" / "v.json").write_text(json.dumps({"failed_checks": ["scope"]}))
    (tmp_path / "task.log").write_text("Patch does not apply cleanly\nmore\n")
    row = {"ok": True, "scoring": {"mode": "verify-script", "passed": False},
           "verify": {"path": "verify/v.json"}, "task": {"stderr_path": "task.log"}}
    actual, failed, note = verdict_from_row(row, tmp_path, None)
    assert (actual, failed) == ("fail", ("scope",))
    assert "Patch does not apply cleanly" in note and "more" not in note
    assert verdict_from_row(None, tmp_path, "workspace exists")[0:1] == ("fail",)


@pytest.mark.slow
def test_it_runs_fixtures_end_to_end_and_exits_1_on_a_mismatch(pack_copy, tmp_path, capsys):
    # Claim the known-good patch must fail and the shortcut must pass: both verdicts mismatch.
    write_manifest(pack_copy, """
[[fixtures]]
id = "known-good"
kind = "known-good"
model_output = "known-good.md"
expected = "fail"
description = "mislabelled on purpose"

[[fixtures]]
id = "shortcut"
kind = "shortcut"
model_output = "shortcut-hardcode.md"
expected = "pass"
description = "mislabelled on purpose"
""")
    keep = tmp_path / "keep"
    assert main(["audit", str(pack_copy), "--json", "--keep", str(keep)]) == 1
    report = json.loads(capsys.readouterr().out)
    verdicts = {f["fixture"]: (f["actual"], f["ok"]) for f in report["fixtures"]}
    assert verdicts == {"known-good": ("pass", False), "shortcut": ("fail", False)}
    # the evidence of the real run is kept: row, patch and verifier JSON
    row = json.loads((keep / CASE / "known-good" / "run.jsonl").read_text().splitlines()[0])
    assert row["repo_task"]["status"] == "passed"
    assert "divmod" in (keep / CASE / "known-good" / row["patch"]["path"]).read_text()
