import hashlib
import json
import shutil
import threading

import pytest

from benchpack.bundles.checks import CHECKS, BundleLimits
from benchpack.bundles.create import create_bundle, validate_bundle
from benchpack.cli import main
from tests.hostile import REAL_RESULTS, SECRETS, row, write_result_dir


@pytest.fixture
def bundle(tmp_path):
    return create_bundle([write_result_dir(tmp_path / "src" / "run-a")], tmp_path / "bundle", "self-reported")


def test_it_reports_every_check_as_passed_for_a_good_bundle(bundle):
    report = validate_bundle(bundle)
    assert report.ok and report.findings == []
    assert report.checks == {check.name: "passed" for check in CHECKS}


def test_it_skips_checks_that_depend_on_a_broken_manifest_and_says_so(bundle):
    (bundle / "bundle.json").write_text("{")
    report = validate_bundle(bundle)
    assert not report.ok
    assert report.checks["manifest"] == "failed"
    assert all(report.checks[name] == "skipped" for name in ("paths", "hashes", "rows", "secrets"))
    skipped = [f for f in report.findings if f.code == "check.skipped"]
    assert len(skipped) == len(CHECKS) - 2 and all(f.severity == "warning" for f in skipped)


def test_it_never_calls_a_bundle_valid_after_an_error(bundle):
    (bundle / "runs/run-a/hardware.json").write_text('{"platform": "tampered"}')
    report = validate_bundle(bundle)
    assert not report.ok
    assert [f.code for f in report.errors] == ["size.mismatch"]


def test_it_gives_a_json_serializable_report_with_locations(bundle):
    (bundle / "runs/run-a/run.jsonl").write_text('{"ok": 1}\n')
    entry = json.loads((bundle / "bundle.json").read_text())
    report = validate_bundle(bundle).to_dict()
    assert json.loads(json.dumps(report)) == report
    assert report["ok"] is False and report["error_count"] >= 1
    first = report["findings"][0]
    assert set(first) == {"code", "message", "path", "line", "severity"}
    assert entry["runs"][0]["path"] + "/run.jsonl" == first["path"]


def test_it_points_at_the_row_and_rule_that_fail(tmp_path):
    bad = row()
    bad["tokens"]["prompt"] = -3
    # create refuses invalid rows, so build a valid bundle and break row 2 afterwards
    bundle = create_bundle([write_result_dir(tmp_path / "src" / "run-a", rows=[row(), row()])], tmp_path / "b", "self-reported")
    lines = (bundle / "runs/run-a/run.jsonl").read_text().splitlines()
    lines[1] = json.dumps(bad)
    _rewrite(bundle, "runs/run-a/run.jsonl", "\n".join(lines) + "\n")
    findings = [f for f in validate_bundle(bundle).findings if f.code == "row.schema"]
    assert [(f.path, f.line) for f in findings] == [("runs/run-a/run.jsonl", 2)]
    assert "/tokens/prompt" in findings[0].message and "minimum" in findings[0].message
    assert "-3" not in findings[0].message  # rules are described, values are not echoed


def test_it_accepts_old_rows_without_newer_fields(tmp_path):
    old = row()
    for key in ("patch", "repetition"):
        old.pop(key)
    old["tokens"] = {"prompt": 41, "output": 8}
    old["timing"] = {"wall_s": 0.68, "ttft_s": None, "prefill_tps": None, "decode_tps": None, "total_tps": 11.68}
    source = write_result_dir(tmp_path / "src" / "run-a", rows=[old])
    assert validate_bundle(create_bundle([source], tmp_path / "b", "self-reported")).ok


def test_it_refuses_to_create_a_bundle_whose_rows_break_the_schema(tmp_path):
    source = write_result_dir(tmp_path / "src" / "run-a", rows=[row(ok="yes")])
    assert main(["registry", "bundle", "create", "--out", str(tmp_path / "b"), "--provenance", "self-reported", str(source)]) == 2
    assert not (tmp_path / "b").exists()


def test_it_applies_size_limits(bundle):
    report = validate_bundle(bundle, BundleLimits(max_file_bytes=10))
    assert "limit.file-size" in {f.code for f in report.findings}


def _rewrite(bundle, relative, text):
    (bundle / relative).write_text(text)
    manifest = json.loads((bundle / "bundle.json").read_text())
    for run in manifest["runs"]:
        for entry in run["files"]:
            if f"{run['path']}/{entry['path']}" == relative:
                entry.update(sha256=hashlib.sha256(text.encode()).hexdigest(), bytes=len(text.encode()))
    (bundle / "bundle.json").write_text(json.dumps(manifest))


# --- CLI ---------------------------------------------------------------------------


def test_it_exits_0_for_valid_1_for_invalid_2_for_bad_usage(bundle, tmp_path, capsys):
    assert main(["registry", "bundle", "validate", str(bundle)]) == 0
    assert "valid" in capsys.readouterr().out
    (bundle / "stray.txt").write_text("x")
    assert main(["registry", "bundle", "validate", str(bundle)]) == 1
    out = capsys.readouterr().out
    assert "file.unlisted" in out and "INVALID" in out
    assert main(["registry", "bundle", "validate", str(tmp_path / "nope")]) == 2


def test_it_prints_the_report_as_json(bundle, capsys):
    assert main(["registry", "bundle", "validate", "--json", str(bundle)]) == 0
    assert json.loads(capsys.readouterr().out)["ok"] is True


def test_it_refuses_a_secret_at_create_with_exit_2_without_echoing_it(tmp_path, capsys):
    text, secret = SECRETS["openai-key"]
    source = write_result_dir(tmp_path / "src" / "run-a", rows=[row(ok=False, error=f"401 for key {text}")])
    code = main(["registry", "bundle", "create", "--out", str(tmp_path / "b"), "--provenance", "self-reported", str(source)])
    captured = capsys.readouterr()
    assert code == 2
    assert "secret.openai-key" in captured.err and "run.jsonl" in captured.err
    assert secret not in captured.out + captured.err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["src"]


def test_it_creates_packs_unpacks_and_validates_the_real_results_from_the_cli(tmp_path, capsys):
    sources = [str(path) for path in sorted(REAL_RESULTS.iterdir())]
    bundle, archive, unpacked = tmp_path / "bundle", tmp_path / "real.tar.gz", tmp_path / "unpacked"
    assert main(["registry", "bundle", "create", "--out", str(bundle), "--provenance", "operator-curated", *sources]) == 0
    assert main(["registry", "bundle", "pack", str(bundle), "--out", str(archive)]) == 0
    assert main(["registry", "bundle", "unpack", str(archive), "--out", str(unpacked)]) == 0
    assert main(["registry", "bundle", "validate", str(unpacked)]) == 0


def test_it_will_not_pack_an_invalid_bundle(bundle, tmp_path):
    shutil.rmtree(bundle / "runs/run-a/patch")
    assert main(["registry", "bundle", "pack", str(bundle), "--out", str(tmp_path / "b.zip")]) == 1
    assert not (tmp_path / "b.zip").exists()


def test_it_fails_closed_when_the_background_secret_prefilter_crashes(bundle, monkeypatch):
    def broken(data):
        raise RuntimeError("prefilter bug")

    # Only the validator's prefilter (secrets and numbers, one RE2 pass) breaks;
    # the report's own redaction still works.
    monkeypatch.setattr("benchpack.bundles.checks._prefilter", broken)
    report = validate_bundle(bundle)
    assert not report.ok
    assert report.checks["secrets"] == "failed" and report.checks["json-values"] == "failed"
    assert [f.code for f in report.errors] == ["check.internal-error"] * 2
    assert not [t for t in threading.enumerate() if t.name.startswith("bundle-secret-prefilter")]  # worker stopped

