"""Workload and system keys: what was asked vs who answered, each with its inputs."""

import copy
import json

from benchpack.packs import case_content
from benchpack.registry import fingerprint as fp
from tests.data_paths import REAL_RESULTS

APPLE = {"cpu_model": "Apple M5 Max", "chip": "Apple M5 Max", "ram_mb": 65536,
         "gpus": [{"model": "Apple M5 Max", "vram_mb": None}]}
LINUX = {"cpu_model": "AMD Ryzen 9 7950X 16-Core Processor", "ram_mb": 64219,
         "gpus": [{"model": "NVIDIA GeForce RTX 4090"}, {"model": "NVIDIA GeForce RTX 4090"}]}
META = {"runtime": {"name": "llama.cpp", "version": "b6000"}, "model": {"quantization": "Q4_K_M"}}
REQUEST = {"temperature": 0.0, "max_tokens": 128, "stream": True, "openai_stream_usage": "include",
           "case_sha256": "ab" * 32}


def row(**changes):
    base = {"pack": {"id": "runtime-sweep", "version": "1.0.0"}, "case": "short", "adapter": "openai-chat",
            "model": "qwen", "ok": True, "tokens": {"prompt": 100, "cached_prompt": 0}, "request": dict(REQUEST)}
    base.update(changes)
    return base


def test_a_complete_workload_key_names_every_input_and_its_source():
    key = fp.workload_key([row()])
    assert key.complete and key.fields["cache_state"] == "cold" and key.fields["stream_usage"] == "include"
    assert key.sources["temperature"] == "run.jsonl: request.temperature"
    assert set(key.to_dict()["fields"]) == set(fp.WORKLOAD_FIELDS)


def test_the_workload_key_ignores_who_answered_and_the_system_key_ignores_what_was_asked():
    a = fp.workload_key([row(model="qwen")])
    b = fp.workload_key([row(model="llama", endpoint="http://elsewhere")])
    assert a.digest == b.digest
    assert fp.system_key(META, APPLE, "qwen").digest == fp.system_key(META, APPLE, "qwen").digest
    assert fp.system_key(META, APPLE, "qwen").digest != fp.system_key(META, LINUX, "qwen").digest
    assert fp.system_key(META, APPLE, "qwen").digest != fp.system_key(META, APPLE, "llama").digest


def test_every_workload_input_changes_the_key():
    base = fp.workload_key([row()]).digest
    changed = [
        row(pack={"id": "runtime-sweep", "version": "1.1.0"}), row(case="long"), row(adapter="ollama-generate"),
        row(request={**REQUEST, "temperature": 0.7}), row(request={**REQUEST, "max_tokens": 64}),
        row(request={**REQUEST, "stream": False}), row(request={**REQUEST, "openai_stream_usage": "omit"}),
        row(request={**REQUEST, "case_sha256": "cd" * 32}), row(tokens={"prompt": 100, "cached_prompt": 90}),
        row(depth_tokens=4096), row(concurrency=4), row(arrival_rate=2.0),
    ]
    digests = [fp.workload_key([r]).digest for r in changed]
    assert base not in digests and len(set(digests)) == len(digests)


def test_lane_fields_absent_are_not_unknown_but_missing_settings_are():
    assert "depth_tokens" not in fp.workload_key([row()]).unknown
    bare = row()
    del bare["request"]
    key = fp.workload_key([bare])
    assert {"temperature", "max_tokens", "stream", "case_sha256"} <= set(key.unknown)
    assert not key.complete


def test_older_rows_take_request_settings_from_the_bundled_pack_of_that_version():
    from benchpack.packs.loader import bundled_packs_dir, load_pack

    pack = load_pack(bundled_packs_dir() / "runtime-sweep")
    bare = row(pack={"id": "runtime-sweep", "version": pack.version})
    del bare["request"]
    key = fp.workload_key([bare], case_content.case_spec("runtime-sweep", pack.version, "short"))
    assert key.fields["max_tokens"] == pack.defaults.max_tokens
    assert key.sources["max_tokens"].startswith("pack definition")
    assert key.fields["case_sha256"] == case_content.case_digest(pack, pack.cases[0])
    assert case_content.case_spec("runtime-sweep", "0.0.1-not-bundled", "short") is None


def test_an_unknown_cache_state_is_an_unknown_input():
    key = fp.workload_key([row(tokens={"prompt": 100})])
    assert key.fields["cache_state"] == "unknown" and "cache_state" in key.unknown


def test_the_system_key_keeps_the_weights_hash_optional():
    with_hash = fp.system_key({**META, "model": {"quantization": "Q4_K_M", "sha256": "ef" * 32}}, APPLE, "qwen")
    without = fp.system_key(META, APPLE, "qwen")
    assert with_hash.complete and without.complete and with_hash.digest != without.digest
    assert fp.system_key(None, APPLE, "qwen").unknown == ["model_quantization", "runtime_name", "runtime_version"]


def test_the_reproduction_key_is_workload_plus_system():
    w, s = fp.workload_key([row()]), fp.system_key(META, APPLE, "qwen")
    assert fp.reproduction_key(w, s) != fp.reproduction_key(w, fp.system_key(META, LINUX, "qwen"))
    assert fp.reproduction_key(w, s) == fp.reproduction_key(copy.deepcopy(w), s)


def test_words_for_filters():
    assert fp.model_family("Qwen2.5-0.5B-Instruct-Q4_K_M") == "qwen2.5"
    assert fp.model_family("llama3.1:8b") == "llama3.1"
    assert fp.accelerator(LINUX) == "2x NVIDIA GeForce RTX 4090"
    assert fp.accelerator(APPLE) == "Apple M5 Max"
    assert fp.accelerator({"cpu_model": "Intel", "gpus": []}) == "none"


def test_real_rows_get_a_key():
    rows = [json.loads(line) for line in (REAL_RESULTS / "2026-04-29-llama-server-runtime" / "run.jsonl").open()]
    short = [r for r in rows if r["case"] == "short"]
    key = fp.workload_key(short)
    assert key.fields["pack_id"] == "runtime-sweep" and key.fields["case"] == "short"


def test_an_older_bundled_version_gives_its_own_case_content():
    older = case_content.case_spec("runtime-sweep", "1.0.0", "short")
    newest = case_content.case_spec("runtime-sweep", "1.1.0", "short")
    assert older is not None and newest is not None
    assert older["_source"] == "bundled runtime-sweep 1.0.0" and newest["_source"] == "bundled runtime-sweep 1.1.0"
