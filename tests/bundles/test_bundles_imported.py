"""The `imported` bundle check: an imported bundle is labelled in its manifest, every row and run-metadata, or refused."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from benchpack.bundles.validate import validate_bundle
from benchpack.cli import main
from tests.data_paths import DATA
from tests.hostile import write_result_dir

GOLDEN = DATA / "interop" / "vllm-bench-serve.json"


def imported_bundle(tmp_path: Path) -> Path:
    out = tmp_path / "bundle"
    assert main(["import", "vllm", str(GOLDEN), "--out", str(out)]) == 0
    return out


def codes(bundle: Path) -> set[str]:
    return {finding.code for finding in validate_bundle(bundle).errors}


def rewrite(bundle: Path, relative: str, change) -> None:
    """Change one run file and keep the manifest's hash and size of it true (only the label is wrong)."""
    manifest = json.loads((bundle / "bundle.json").read_text())
    run = manifest["runs"][0]
    path = bundle / run["path"] / relative
    data = change(path.read_text()).encode()
    path.write_bytes(data)
    for entry in run["files"]:
        if entry["path"] == relative:
            entry.update(sha256=hashlib.sha256(data).hexdigest(), bytes=len(data))
    (bundle / "bundle.json").write_text(json.dumps(manifest))


def test_an_imported_bundle_is_valid(tmp_path):
    assert validate_bundle(imported_bundle(tmp_path)).ok


def test_imported_rows_without_the_manifest_source_are_refused(tmp_path):
    bundle = imported_bundle(tmp_path)
    manifest = json.loads((bundle / "bundle.json").read_text())
    del manifest["source"]  # an attempt to pass imported figures off as Benchpack-measured
    (bundle / "bundle.json").write_text(json.dumps(manifest))
    assert "imported.unlabelled" in codes(bundle)


def test_a_row_relabelled_as_measured_is_refused(tmp_path):
    bundle = imported_bundle(tmp_path)
    rewrite(bundle, "run.jsonl", lambda text: text.replace('"adapter":"imported-vllm"', '"adapter":"openai-chat"', 1))
    assert "imported.mismatch" in codes(bundle)


def test_run_metadata_that_disagrees_with_the_source_is_refused(tmp_path):
    bundle = imported_bundle(tmp_path)
    rewrite(bundle, "run-metadata.json", lambda text: text.replace('"tool": "vllm"', '"tool": "guidellm"', 1))
    assert "imported.metadata-mismatch" in codes(bundle)


def test_a_measured_bundle_is_untouched_by_the_check(tmp_path):
    from benchpack.bundles.create import create_bundle

    source = write_result_dir(tmp_path / "run-a")
    bundle = create_bundle([source], tmp_path / "measured", "self-reported")
    report = validate_bundle(bundle)
    assert report.ok and report.checks["imported"] == "passed"
