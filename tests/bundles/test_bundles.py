import hashlib
import json
import shutil
from pathlib import Path

import pytest

from benchpack.bundles.create import create_bundle, validate_bundle
from benchpack.errors import BenchpackError
from tests.hostile import REAL_RESULTS, row, snapshot, write_result_dir


def manifest_of(bundle: Path) -> dict:
    return json.loads((bundle / "bundle.json").read_text())


def test_it_bundles_the_real_results_into_a_valid_bundle(tmp_path):
    sources = sorted(REAL_RESULTS.iterdir())
    bundle = create_bundle(sources, tmp_path / "bundle", "self-reported")
    report = validate_bundle(bundle)
    assert report.ok, report.to_dict()
    manifest = manifest_of(bundle)
    assert [run["label"] for run in manifest["runs"]] == [source.name for source in sources]
    for run, source in zip(manifest["runs"], sources):
        assert {f["path"] for f in run["files"]} == {"run.jsonl", "hardware.json"}
        assert (bundle / run["path"] / "run.jsonl").read_bytes() == (source / "run.jsonl").read_bytes()
        assert [o["path"] for o in run["omitted"]] == ["summary.md"]


def test_it_copies_only_compact_artifacts_and_records_the_rest(tmp_path):
    source = write_result_dir(tmp_path / "run-a")
    bundle = create_bundle([source], tmp_path / "out", "operator-curated")
    run = manifest_of(bundle)["runs"][0]
    assert {(f["path"], f["role"]) for f in run["files"]} == {
        ("run.jsonl", "run"),
        ("hardware.json", "hardware"),
        ("run-metadata.json", "run-metadata"),
        ("patch/fix-repo/rep-001.diff", "patch"),
        ("task/fix-repo/rep-001.model-calls.jsonl", "model-calls"),
    }
    omitted = {o["path"]: o for o in run["omitted"]}
    assert set(omitted) == {
        "summary.md",
        "raw/fix-repo.request.json",
        "raw/fix-repo.response.json",
        "task/fix-repo/rep-001.stdout.log",
        "workspace/fix-repo/rep-001/x.py",
    }
    raw = (source / "raw/fix-repo.request.json").read_bytes()
    assert omitted["raw/fix-repo.request.json"]["sha256"] == hashlib.sha256(raw).hexdigest()
    assert omitted["raw/fix-repo.request.json"]["bytes"] == len(raw)
    assert not (bundle / "runs/run-a/raw").exists()
    assert not (bundle / "runs/run-a/workspace").exists()


def test_it_never_writes_absolute_paths_into_the_manifest(tmp_path):
    source = write_result_dir(tmp_path / "run-a")
    bundle = create_bundle([source], tmp_path / "out", "self-reported")
    text = (bundle / "bundle.json").read_text()
    assert str(tmp_path) not in text
    manifest = manifest_of(bundle)
    assert manifest["provenance"] == "self-reported" and manifest["format_version"] == 1


def test_it_omits_unsafe_model_call_logs(tmp_path):
    unsafe = {"schema_version": 1, "sequence": 1, "model": "m", "ok": True, "prompt": "the whole prompt"}
    source = write_result_dir(tmp_path / "run-a", model_calls=[unsafe])
    run = manifest_of(create_bundle([source], tmp_path / "out", "self-reported"))["runs"][0]
    reasons = {o["path"]: o["reason"] for o in run["omitted"]}
    assert reasons["task/fix-repo/rep-001.model-calls.jsonl"] == "unsafe-model-call-log"


def test_it_skips_patch_paths_that_point_outside_the_result_dir(tmp_path):
    outside = tmp_path / "secret.diff"
    outside.write_text("outside evidence\n")
    source = write_result_dir(tmp_path / "run-a", rows=[row(patch={"path": "../secret.diff"})])
    bundle = create_bundle([source], tmp_path / "out", "self-reported")
    run = manifest_of(bundle)["runs"][0]
    assert "outside evidence" not in "".join(p.read_text() for p in bundle.rglob("*") if p.is_file())
    assert {o["path"]: o["reason"] for o in run["omitted"]}["patch/fix-repo/rep-001.diff"] == "unreferenced-patch"


def test_it_refuses_a_bundle_with_a_secret_and_leaves_nothing_behind(tmp_path):
    token = "ghp_" + "Zz9Yy8Xx7Ww6Vv5Uu4Tt3Ss2Rr1Qq0Pp9Oo8"
    source = write_result_dir(tmp_path / "src" / "run-a", rows=[row(ok=False, error=f"auth failed for {token}")])
    before = snapshot(tmp_path)
    with pytest.raises(BenchpackError) as caught:
        create_bundle([source], tmp_path / "out", "self-reported")
    assert "secret.github-token" in str(caught.value)
    assert token not in str(caught.value)
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("out_relative", ["src/run-a", "src/run-a/bundle", "src"])
def test_it_refuses_an_output_that_overlaps_a_source(tmp_path, out_relative):
    source = write_result_dir(tmp_path / "src" / "run-a")
    before = snapshot(tmp_path)
    with pytest.raises(BenchpackError, match="disjoint"):
        create_bundle([source], tmp_path / out_relative, "self-reported", force=True)
    assert snapshot(tmp_path) == before


def test_it_replaces_an_existing_bundle_only_with_force(tmp_path):
    source = write_result_dir(tmp_path / "run-a")
    out = create_bundle([source], tmp_path / "out", "self-reported")
    with pytest.raises(BenchpackError, match="--force"):
        create_bundle([source], out, "self-reported")
    create_bundle([source], out, "independently-reproduced", force=True)
    assert manifest_of(out)["provenance"] == "independently-reproduced"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "run-a"]


def test_it_refuses_to_force_over_a_directory_that_is_not_a_bundle(tmp_path):
    source = write_result_dir(tmp_path / "run-a")
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "notes.txt").write_text("keep me")
    with pytest.raises(BenchpackError, match="not a bundle directory"):
        create_bundle([source], precious, "self-reported", force=True)
    assert (precious / "notes.txt").read_text() == "keep me"


def test_it_refuses_two_sources_with_the_same_name(tmp_path):
    first = write_result_dir(tmp_path / "a" / "run")
    second = write_result_dir(tmp_path / "b" / "run")
    with pytest.raises(BenchpackError, match="same directory name"):
        create_bundle([first, second], tmp_path / "out", "self-reported")


def test_it_rejects_an_unknown_provenance(tmp_path):
    source = write_result_dir(tmp_path / "run-a")
    with pytest.raises(BenchpackError, match="--provenance"):
        create_bundle([source], tmp_path / "out", "trust-me")


def hostnames_in(bundle: Path) -> list[str]:
    return [json.loads((bundle / run["path"] / "hardware.json").read_text())["hostname"]
            for run in manifest_of(bundle)["runs"]]


def test_a_bundle_carries_an_opaque_label_instead_of_the_hostname(tmp_path):
    sources = sorted(REAL_RESULTS.iterdir())  # three runs from the same machine, "atlas.local"
    bundle = create_bundle(sources, tmp_path / "bundle", "self-reported")
    assert validate_bundle(bundle).ok
    labels = hostnames_in(bundle)
    assert len(set(labels)) == 1 and labels[0].startswith("host-") and len(labels[0]) == 15
    for run in manifest_of(bundle)["runs"]:
        text = (bundle / run["path"] / "hardware.json").read_text()
        assert "atlas" not in text
        listed = {f["path"]: f for f in run["files"]}["hardware.json"]
        assert listed["sha256"] == hashlib.sha256(text.encode()).hexdigest()  # the manifest hashes what is shipped
    again = create_bundle(sources, tmp_path / "again", "self-reported")
    assert hostnames_in(again)[0] != labels[0]  # not linkable across bundles
    source = sources[0]
    assert json.loads((source / "hardware.json").read_text())["hostname"] == "atlas.local"  # the source is untouched


def test_a_bundle_keeps_a_label_the_user_chose(tmp_path):
    sources = sorted(REAL_RESULTS.iterdir())
    bundle = create_bundle(sources, tmp_path / "bundle", "self-reported", host_label="lab-4090")
    assert hostnames_in(bundle) == ["lab-4090"] * len(sources)
    labelled = write_result_dir(tmp_path / "run-a")
    hardware = json.loads((labelled / "hardware.json").read_text())
    (labelled / "hardware.json").write_text(json.dumps({**hardware, "hostname": "bench-1", "host_label": True}))
    assert hostnames_in(create_bundle([labelled], tmp_path / "out", "self-reported")) == ["bench-1"]


def test_a_host_label_that_is_not_a_plain_name_is_refused(tmp_path):
    source = write_result_dir(tmp_path / "run-a")
    with pytest.raises(BenchpackError, match="--host-label"):
        create_bundle([source], tmp_path / "out", "self-reported", host_label="../etc passwd")
    assert not (tmp_path / "out").exists()


def test_the_cli_takes_a_host_label_for_the_bundle(tmp_path, capsys):
    from benchpack.cli import main

    sources = [str(path) for path in sorted(REAL_RESULTS.iterdir())]
    assert main(["registry", "bundle", "create", "--out", str(tmp_path / "b"), "--provenance", "self-reported",
                 "--host-label", "my-desktop", *sources]) == 0
    assert set(hostnames_in(tmp_path / "b")) == {"my-desktop"}
    assert main(["registry", "bundle", "create", "--out", str(tmp_path / "c"), "--provenance", "self-reported",
                 "--host-label", "bad label", *sources]) == 2
    assert "--host-label" in capsys.readouterr().err and not (tmp_path / "c").exists()


def test_a_run_that_did_not_finish_is_refused_unless_allowed(tmp_path):
    import json as _json

    from benchpack.bundles.create import create_bundle
    from benchpack.errors import ConfigError

    source = tmp_path / "cut-run"
    shutil.copytree(REAL_RESULTS / "2026-04-29-llama-server-smoke", source)
    (source / "run-metadata.json").write_text(_json.dumps(
        {"complete": False, "incomplete_reason": "interrupted (Ctrl-C) after 1 of 3 executions"}))
    with pytest.raises(ConfigError) as info:
        create_bundle([source], tmp_path / "bundle", "self-reported")
    assert "the run did not finish (interrupted (Ctrl-C) after 1 of 3 executions)" in info.value.lines()[0]
    assert not (tmp_path / "bundle").exists()
    out = create_bundle([source], tmp_path / "bundle", "self-reported", allow_incomplete=True)
    assert _json.loads((out / "runs" / "cut-run" / "run-metadata.json").read_text())["complete"] is False
