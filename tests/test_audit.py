"""`benchpack audit`: fixture manifests are validated, every fixture runs through
the real runner/executor/verifier, and a verdict mismatch is exit status 1."""

from __future__ import annotations

import json
import shutil

import pytest

from benchpack.audit import AuditFixture, AuditResult, load_audit, missing_coverage, verdict_from_row
from benchpack.cli import main
from benchpack.errors import PackError
from benchpack.packs import bundled_packs_dir, load_pack

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
                AuditFixture("c", "w", "missing-evidence", "fail", "", None, None, None)]
    assert missing_coverage(fixtures) == {"c": ["alternative-valid", "wrong", "shortcut", "collateral"]}


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
