"""Comparability fingerprints: equal only when every input is known and equal."""

import json
import shutil
from pathlib import Path

import pytest

from benchpack.cli import main
from benchpack.registry import fingerprint as fp
from tests.data_paths import REAL_RESULTS

APPLE = {"cpu_model": "Apple M5 Max", "chip": "Apple M5 Max", "ram_mb": 65536,
         "gpus": [{"model": "Apple M5 Max", "vram_mb": None}]}
LINUX = {"cpu_model": "AMD Ryzen 9 7950X 16-Core Processor", "ram_mb": 64219,
         "gpus": [{"model": "NVIDIA GeForce RTX 4090"}, {"model": "NVIDIA GeForce RTX 4090"}]}
META = {"runtime": {"name": "llama.cpp", "version": "b6000"}, "model": {"quantization": "Q4_K_M"}}


def make(pack_version="0.1.5", case="short", model="qwen", metadata=META, hardware=APPLE):
    return fp.compute(fp.fingerprint_inputs("runtime-sweep", pack_version, case, model, metadata, hardware))


@pytest.mark.parametrize("hardware, expected", [
    (APPLE, "apple-m5-max-64gb"),
    (LINUX, "amd-ryzen-9-7950x+2x-nvidia-geforce-rtx-4090+64gb"),
    ({"cpu_model": "Intel(R) Core(TM) i9-13900K CPU @ 3.00GHz", "ram_mb": 31900, "gpus": []},
     "intel-core-i9-13900k+no-gpu+32gb"),
    ({"cpu_model": "Intel(R) Xeon(R) Gold 6338", "ram_mb": 1031000, "gpus": ["NVIDIA A100-SXM4-80GB"]},
     "intel-xeon-gold-6338+nvidia-a100-sxm4-80gb+1024gb"),
    ({"cpu_model": "AMD EPYC", "ram_mb": 65536}, None),  # GPUs not recorded: unknown, not "none"
    ({"cpu_model": None, "ram_mb": 65536, "gpus": []}, None),
    (None, None),
])
def test_it_normalizes_hardware_into_a_class(hardware, expected):
    assert fp.hardware_class(hardware) == expected


def test_it_ignores_patch_versions_but_not_minor_versions():
    assert make("0.1.5").digest == make("0.1.0").digest
    assert make("0.2.0").digest != make("0.1.0").digest
    assert fp.major_minor("2026-04") == "2026-04"


def test_it_calls_equal_complete_fingerprints_comparable():
    verdict = fp.compare(make(), make())
    assert verdict.verdict == "comparable" and not verdict.differing and not verdict.unknown


def test_it_names_the_inputs_that_make_rows_incomparable():
    other = {"runtime": {"name": "llama.cpp", "version": "b6100"}, "model": {"quantization": "Q8_0"}}
    verdict = fp.compare(make(), make(metadata=other, hardware=LINUX))
    assert verdict.verdict == "not-comparable"
    assert verdict.differing == {
        "model_quantization": ["Q4_K_M", "Q8_0"],
        "runtime_version": ["b6000", "b6100"],
        "hardware_class": ["apple-m5-max-64gb", "amd-ryzen-9-7950x+2x-nvidia-geforce-rtx-4090+64gb"],
    }


def test_it_never_calls_rows_with_missing_inputs_comparable():
    a, b = make(metadata=None), make(metadata=None)
    assert a.digest == b.digest  # same hash: same recorded inputs ...
    verdict = fp.compare(a, b)
    assert verdict.verdict == "unknown"  # ... but unrecorded conditions are not proof of equality
    assert verdict.unknown == ["model_quantization", "runtime_name", "runtime_version"]
    assert a.to_dict()["complete"] is False
    assert "runtime_name: unknown" in "\n".join(fp.explain(a))


def test_it_prefers_the_metadata_model_id_and_says_where_each_value_came_from():
    meta = {**META, "model": {"id": "Qwen/Qwen2.5-0.5B-Instruct", "quantization": "Q4_K_M"}}
    print_ = make(metadata=meta)
    assert print_.fields["model_id"] == "Qwen/Qwen2.5-0.5B-Instruct"
    assert print_.sources["model_id"] == "run-metadata.json: model.id"
    assert make().sources["model_id"] == "run.jsonl: model"


def test_it_hashes_canonical_json_so_key_order_does_not_matter():
    reordered = {"model": {"quantization": "Q4_K_M"}, "runtime": {"version": "b6000", "name": "llama.cpp"}}
    assert make(metadata=reordered).digest == make().digest
    assert fp.Fingerprint.from_dict(json.loads(make().to_json())).digest == make().digest


def test_it_explains_real_result_dirs_from_the_cli(tmp_path, capsys):
    runs = [REAL_RESULTS / "2026-04-28-mlx-lm-runtime", REAL_RESULTS / "2026-04-29-llama-server-runtime"]
    assert main(["registry", "fingerprint", *map(str, runs)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert len(report["fingerprints"]) == 6
    short = [c for c in report["comparisons"] if c["case"] == "short"]
    assert len(short) == 1
    assert short[0]["verdict"] == "not-comparable"
    assert list(short[0]["differing"]) == ["model_id"]
    assert short[0]["unknown"] == ["model_quantization", "runtime_name", "runtime_version"]


def test_it_calls_two_fully_described_runs_comparable(tmp_path, capsys):
    runs = []
    for name in ("a", "b"):
        run = tmp_path / name
        shutil.copytree(REAL_RESULTS / "2026-04-29-llama-server-smoke", run)
        (run / "run-metadata.json").write_text(json.dumps(META))
        runs.append(str(run))
    assert main(["registry", "fingerprint", *runs]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [c["verdict"] for c in report["comparisons"]] == ["comparable"]
    assert report["fingerprints"][0]["digest"] == report["fingerprints"][1]["digest"]
