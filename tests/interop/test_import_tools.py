"""`benchpack import vllm|guidellm|aiperf|llama-bench`: the pinned tools' own files (tests/data/interop/) become
valid bundles labelled as imported, whose figures equal the tool's own; hostile files are refused field by field."""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path
from typing import Callable

import numpy as np
import pytest

from benchpack.bundles.validate import validate_bundle
from benchpack.cli import main
from tests.data_paths import DATA
from tests.environment import needs
from tests.hostile import snapshot

INTEROP = DATA / "interop"
VLLM = INTEROP / "vllm-bench-serve.json"
VLLM_LLAMA = INTEROP / "vllm-bench-serve-llama-server.json"  # the real llama-server; 3 of 12 requests failed
GUIDELLM = INTEROP / "guidellm-benchmarks.json"
GUIDELLM_LLAMA = INTEROP / "guidellm-llama-server.json"  # the real llama-server: unequal answer lengths
AIPERF = INTEROP / "aiperf" / "profile_export_aiperf.json"
AIPERF_JSONL = INTEROP / "aiperf" / "profile_export.jsonl"
AIPERF_LLAMA = INTEROP / "aiperf-llama-server" / "profile_export_aiperf.json"  # the real llama-server
LLAMA_BENCH_JSON = INTEROP / "llama-bench.json"
LLAMA_BENCH_JSONL = INTEROP / "llama-bench.jsonl"


def run_import(tool: str, path: Path, out: Path, *extra: str) -> int:
    return main(["import", tool, str(path), "--out", str(out), *extra])


def bundle_parts(out: Path) -> tuple[dict, list[dict], dict]:
    manifest = json.loads((out / "bundle.json").read_text())
    run = out / manifest["runs"][0]["path"]
    rows = [json.loads(line) for line in (run / "run.jsonl").read_text().splitlines() if line.strip()]
    return manifest, rows, json.loads((run / "run-metadata.json").read_text())


def close(a: float, b: float, rel: float = 1e-9) -> bool:
    return math.isclose(a, b, rel_tol=rel, abs_tol=1e-15)


def assert_labelled(manifest: dict, rows: list[dict], metadata: dict, tool: str, version: str | None) -> None:
    label = f"imported from {tool} {version or '(version not recorded)'}"
    assert manifest["source"]["label"] == label and manifest["source"]["tool"] == tool
    assert metadata["imported"]["label"] == label and metadata["imported"]["tool_version"] == version
    assert all(r["adapter"] == f"imported-{tool}" and r["pack"]["id"] == f"imported-{tool}" for r in rows)


# --- vLLM ------------------------------------------------------------------------------


@pytest.mark.parametrize("golden", [VLLM, VLLM_LLAMA], ids=["scripted-endpoint", "llama-server"])
def test_vllm_golden_imports_with_the_tools_own_figures(golden, tmp_path, capsys):
    out = tmp_path / "bundle"
    assert run_import("vllm", golden, out, "--tool-version", "0.11.0", "--runtime", "benchpack-refserver 0") == 0
    assert validate_bundle(out).ok
    manifest, rows, metadata = bundle_parts(out)
    assert_labelled(manifest, rows, metadata, "vllm", "0.11.0")
    tool = json.loads(golden.read_text())
    ok = [r for r in rows if r["ok"]]
    assert all(r["error"] for r in rows if not r["ok"]) and len(ok) < len(rows) if tool["failed"] else True
    assert len(ok) == tool["completed"] and len(rows) == tool["completed"] + tool["failed"]
    assert sum(r["tokens"]["output"] for r in rows) == tool["total_output_tokens"]
    assert sum(r["tokens"]["prompt"] for r in ok) == tool["total_input_tokens"]
    # Per-request rows recompute the tool's own aggregates (numpy, as vllm/benchmarks/serve.py does).
    for name, key in (("ttft", "ttft_s"), ("tpot", "tpot_s")):
        values = [r["timing"][key] for r in ok if key in r["timing"]]
        assert close(float(np.mean(values)) * 1000, tool[f"mean_{name}_ms"])
        assert close(float(np.median(values)) * 1000, tool[f"median_{name}_ms"])
        assert close(float(np.percentile(values, 99)) * 1000, tool[f"p99_{name}_ms"])
        figures = metadata["imported"]["figures"][key]
        assert figures["p99"] == tool[f"p99_{name}_ms"] / 1000 and figures["mean"] == tool[f"mean_{name}_ms"] / 1000
    itls = [gap for r in ok for gap in r["backend"]["imported"]["figures"]["itl_s"]]
    assert close(float(np.mean(itls)) * 1000, tool["mean_itl_ms"])
    assert metadata["imported"]["tool_figures"]["p99_itl_ms"] == tool["p99_itl_ms"]  # ITL is not TPOT: own name
    assert "itl" not in json.dumps(metadata["imported"]["figures"])
    assert metadata["runtime"]["name"] == "benchpack-refserver"
    assert "hardware" in metadata["imported"]["unknown"]


def test_vllm_without_a_version_says_it_was_not_recorded(tmp_path):
    out = tmp_path / "bundle"
    assert run_import("vllm", VLLM, out) == 0
    manifest, rows, metadata = bundle_parts(out)
    assert_labelled(manifest, rows, metadata, "vllm", None)
    assert "tool version" in metadata["imported"]["unknown"]


def test_vllm_aggregate_only_file_keeps_the_aggregates(tmp_path):
    tool = json.loads(VLLM.read_text())
    for key in ("input_lens", "output_lens", "start_times", "ttfts", "itls", "generated_texts", "errors"):
        del tool[key]  # what --save-result writes without --save-detailed
    source = tmp_path / "plain.json"
    source.write_text(json.dumps(tool))
    out = tmp_path / "bundle"
    assert run_import("vllm", source, out) == 0
    _, rows, metadata = bundle_parts(out)
    assert len(rows) == 1 and rows[0]["backend"]["imported"]["figures"]["aggregate_only"] is True
    assert "timing" not in rows[0]
    assert metadata["imported"]["figures"]["ttft_s"]["median"] == tool["median_ttft_ms"] / 1000


# --- GuideLLM ---------------------------------------------------------------------------


@pytest.mark.parametrize("golden", [GUIDELLM, GUIDELLM_LLAMA], ids=["scripted-endpoint", "llama-server"])
def test_guidellm_golden_imports_with_the_tools_own_figures(golden, tmp_path):
    out = tmp_path / "bundle"
    assert run_import("guidellm", golden, out) == 0
    assert validate_bundle(out).ok
    manifest, rows, metadata = bundle_parts(out)
    assert_labelled(manifest, rows, metadata, "guidellm", "0.8.1")
    report = json.loads(golden.read_text())
    benchmark = report["benchmarks"][0]
    assert len([r for r in rows if r["ok"]]) == benchmark["metrics"]["request_totals"]["successful"]
    for key, name in (("ttft_s", "time_to_first_token_ms"), ("tpot_s", "inter_token_latency_ms")):
        tool = benchmark["metrics"][name]["successful"]
        values = [r["timing"][key] * 1000 for r in rows if r["ok"]]
        if key == "tpot_s":  # GuideLLM weighs each request's ITL by its gaps between tokens (output − 1)
            values = [v for r, v in zip([r for r in rows if r["ok"]], values) for _ in range(r["tokens"]["output"] - 1)]
        # GuideLLM's own statistics, recomputed from the imported rows: mean, sum, count, and its
        # percentiles (numpy's inverted_cdf method).
        assert close(float(np.mean(values)), tool["mean"]) and len(values) == tool["count"]
        assert close(math.fsum(values), tool["total_sum"])
        for q, p in ((10, "p10"), (25, "p25"), (50, "p50"), (75, "p75"), (90, "p90"), (99, "p99")):
            assert close(float(np.percentile(values, q, method="inverted_cdf")), tool["percentiles"][p])
        figures = metadata["imported"]["figures"][key]
        assert figures["p99"] == tool["percentiles"]["p99"] / 1000 and figures["mean"] == tool["mean"] / 1000
    # GuideLLM's time_per_output_token_ms includes the wait for the first token: never mapped onto TPOT.
    assert "time_per_output_token_ms" in metadata["imported"]["tool_figures"]["benchmark-1-concurrent"]
    assert all(f["tool_field"] != "time_per_output_token_ms.successful" for f in metadata["imported"]["figures"].values())


# --- AIPerf ------------------------------------------------------------------------------


@pytest.mark.parametrize("named", [AIPERF, AIPERF_JSONL, AIPERF_LLAMA], ids=["aggregate-json", "records-jsonl", "llama-server"])
def test_aiperf_golden_imports_with_the_tools_own_figures(named, tmp_path):
    out = tmp_path / "bundle"
    assert run_import("aiperf", named, out) == 0
    assert validate_bundle(out).ok
    manifest, rows, metadata = bundle_parts(out)
    assert_labelled(manifest, rows, metadata, "aiperf", "0.13.0")
    aggregate = json.loads(named.with_name("profile_export_aiperf.json").read_text())
    assert len(rows) == aggregate["request_count"]["avg"]
    for key, name in (("ttft_s", "time_to_first_token"), ("tpot_s", "inter_token_latency")):
        tool = aggregate[name]
        values = [r["timing"][key] * 1000 for r in rows]
        assert close(float(np.mean(values)), tool["avg"]) and close(float(np.std(values)), tool["std"], 1e-6)
        for q in (1, 5, 10, 25, 50, 75, 90, 95, 99):
            assert close(float(np.percentile(values, q)), tool[f"p{q}"])
        assert metadata["imported"]["figures"][key]["p99"] == tool["p99"] / 1000
    assert metadata["imported"]["tool_figures"]["request_latency"]["p99"] == aggregate["request_latency"]["p99"]


def test_aiperf_records_without_their_aggregate_are_refused(tmp_path, capsys):
    lonely = tmp_path / "profile_export.jsonl"
    lonely.write_bytes(AIPERF_JSONL.read_bytes())
    assert run_import("aiperf", lonely, tmp_path / "out") == 2
    assert "profile_export_aiperf.json: not found beside profile_export.jsonl" in capsys.readouterr().err


# --- llama-bench ---------------------------------------------------------------------------


@pytest.mark.parametrize("golden", [LLAMA_BENCH_JSON, LLAMA_BENCH_JSONL], ids=["json", "jsonl"])
def test_llama_bench_golden_imports_with_its_own_figures(golden, tmp_path):
    out = tmp_path / "bundle"
    assert run_import("llama-bench", golden, out) == 0
    assert validate_bundle(out).ok
    manifest, rows, metadata = bundle_parts(out)
    text = golden.read_text()
    tests = json.loads(text) if text.lstrip().startswith("[") else [json.loads(l) for l in text.splitlines() if l.strip()]
    version = f"b{tests[0]['build_number']}"
    assert_labelled(manifest, rows, metadata, "llama-bench", version)
    assert metadata["runtime"]["name"] == "llama.cpp" and metadata["runtime"]["build_commit"] == tests[0]["build_commit"]
    assert len(rows) == sum(len(t["samples_ts"]) for t in tests)
    for test in tests:
        case = f"pp{test['n_prompt']}" if not test["n_gen"] else f"tg{test['n_gen']}"
        tokens = test["n_prompt"] + test["n_gen"]
        sample_ns = [r["backend"]["imported"]["figures"]["sample_ns"] for r in rows if r["case"] == case]
        # llama-bench's own avg_ns and avg_ts / stddev_ts (per-sample rates, sample standard deviation),
        # recomputed from the imported rows' nanoseconds (it prints avg_ts with 6 decimals, samples_ts with 4)
        assert abs(float(np.mean(sample_ns)) - test["avg_ns"]) <= 1
        rates = [tokens * 1e9 / ns for ns in sample_ns]
        assert close(float(np.mean(rates)), test["avg_ts"], 1e-6)
        assert close(float(np.std(rates, ddof=1)), test["stddev_ts"], 1e-5)
        assert metadata["imported"]["tool_figures"][case]["avg_ts"] == test["avg_ts"]
        assert all("timing" not in r for r in rows)  # nothing of llama-bench is a Benchpack HTTP figure


@pytest.mark.slow
@pytest.mark.real_server
@needs(lambda: _llama_bench().is_file(), "needs llama-bench: bash scripts/llama-server.sh --bench")
def test_llama_bench_run_now_imports(tmp_path):
    """The real llama-bench on the real model, now: its jsonl imports and its avg_ts comes out equal."""
    binary = _llama_bench()
    model = Path(subprocess.run(["bash", str(LLAMA_SCRIPT), "--paths"], capture_output=True, text=True,
                                check=True).stdout.splitlines()[1])
    jsonl = tmp_path / "bench.jsonl"
    with open(jsonl, "w") as handle:
        subprocess.run([str(binary), "-m", str(model), "-p", "16", "-n", "8", "-r", "2", "-t", "1", "-o", "jsonl"],
                       stdout=handle, stderr=subprocess.DEVNULL, check=True, timeout=300)
    out = tmp_path / "bundle"
    assert run_import("llama-bench", jsonl, out) == 0
    _, rows, metadata = bundle_parts(out)
    assert {r["case"] for r in rows} == {"pp16", "tg8"} and len(rows) == 4
    tests = [json.loads(line) for line in jsonl.read_text().splitlines() if line.strip()]
    for test in tests:
        case = "pp16" if test["n_gen"] == 0 else "tg8"
        rates = [(16 if case == "pp16" else 8) * 1e9 / r["backend"]["imported"]["figures"]["sample_ns"]
                 for r in rows if r["case"] == case]
        assert close(float(np.mean(rates)), test["avg_ts"], 1e-6)


LLAMA_SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "llama-server.sh"


def _llama_bench() -> Path:
    done = subprocess.run(["bash", str(LLAMA_SCRIPT), "--paths", "--bench"], capture_output=True, text=True, check=True)
    return Path(done.stdout.splitlines()[2])


# --- the hostile corpus ----------------------------------------------------------------


def _json(path: Path) -> dict:
    return json.loads(path.read_text())


def _set(obj, dotted: str, value):
    parts = dotted.split(".")
    for part in parts[:-1]:
        obj = obj[int(part)] if isinstance(obj, list) else obj[part]
    last = parts[-1]
    if isinstance(obj, list):
        obj[int(last)] = value
    elif value is _DELETE:
        del obj[last]
    else:
        obj[last] = value


_DELETE = object()


def mutated(golden: Path, dotted: str, value) -> bytes:
    data = _json(golden)
    _set(data, dotted, value)
    return json.dumps(data).encode()


def raw_text(golden: Path, old: str, new: str) -> bytes:
    text = golden.read_text()
    assert old in text, old
    return text.replace(old, new, 1).encode()


def generic_cases(tool: str, golden: Path) -> list[tuple]:
    """Breakage any JSON reader must refuse, applied to this tool's golden file."""
    whole = golden.read_bytes()
    return [
        (tool, f"{tool}-truncated", lambda: whole[: len(whole) // 2], "not valid JSON"),
        (tool, f"{tool}-empty", lambda: b"", "empty file"),
        (tool, f"{tool}-not-utf8", lambda: b"\xff\xfe" + whole, "not UTF-8"),
        (tool, f"{tool}-deep", lambda: b"[" * 5000 + b"]" * 5000, "nested deeper than"),
        (tool, f"{tool}-nan", lambda: whole.replace(b"{", b'{"nan_here": NaN, ', 1), "NaN is not a JSON number"),
        (tool, f"{tool}-infinity", lambda: whole.replace(b"{", b'{"inf_here": -Infinity, ', 1), "-Infinity is not"),
        (tool, f"{tool}-huge-int", lambda: b'{"x": ' + b"9" * 5000 + b"}", "too many digits"),
        (tool, f"{tool}-number-overflow", lambda: b'{"x": 1e999}', "out of range"),
        (tool, f"{tool}-duplicate-key", lambda: b'{"a": 1, "a": 2}', "duplicate key"),
        (tool, f"{tool}-top-level-string", lambda: b'"hello"', "(top level)"),
    ]


def vllm_cases() -> list[tuple]:
    g = VLLM
    return [
        *generic_cases("vllm", g),
        ("vllm", "vllm-completed-string", lambda: mutated(g, "completed", "16"), "completed: must be an integer"),
        ("vllm", "vllm-completed-negative", lambda: mutated(g, "completed", -1), "completed: must be at least 0"),
        ("vllm", "vllm-no-completed", lambda: mutated(g, "completed", _DELETE), "completed: missing"),
        ("vllm", "vllm-duration-zero", lambda: mutated(g, "duration", 0), "duration: must be greater than 0"),
        ("vllm", "vllm-duration-bool", lambda: mutated(g, "duration", True), "duration: must be a number"),
        ("vllm", "vllm-ttft-infinity", lambda: raw_text(g, '"mean_ttft_ms": ', '"mean_ttft_ms": Infinity, "x": '),
         "Infinity"),
        ("vllm", "vllm-ttft-negative", lambda: mutated(g, "ttfts.3", -0.5), "ttfts[3]: must be at least 0"),
        ("vllm", "vllm-ttfts-object", lambda: mutated(g, "ttfts", {"a": 1}), "ttfts: must be an array"),
        ("vllm", "vllm-itls-short", lambda: mutated(g, "itls", [[0.1]]), "itls: has 1 entries but ttfts has"),
        ("vllm", "vllm-itl-string", lambda: mutated(g, "itls.0.0", "fast"), "itls[0][0]: must be a number"),
        ("vllm", "vllm-output-lens-float", lambda: mutated(g, "output_lens.1", 2.5), "output_lens[1]: must be an integer"),
        ("vllm", "vllm-errors-number", lambda: mutated(g, "errors.2", 7), "errors[2]: must be a string"),
        ("vllm", "vllm-latency-before-ttft", lambda: mutated(g, "latencies.0", 0.0), "latencies[0]: is less than"),
        ("vllm", "vllm-total-output-lies", lambda: mutated(g, "total_output_tokens", 1), "total_output_tokens"),
        ("vllm", "vllm-completed-lies", lambda: mutated(g, "completed", 3), "completed + failed"),
        ("vllm", "vllm-p99-string", lambda: mutated(g, "p99_tpot_ms", "7 ms"), "p99_tpot_ms: must be a number"),
        ("vllm", "vllm-no-ttft-figures", lambda: json.dumps({k: v for k, v in _json(g).items() if "ttft_ms" not in k}).encode(),
         "mean_ttft_ms: missing"),
        ("vllm", "vllm-model-huge", lambda: mutated(g, "model_id", "m" * 10_000), "model_id: longer than"),
        ("vllm", "vllm-array-top", lambda: b"[1, 2, 3]", "must be an object"),
        ("vllm", "vllm-not-a-vllm-file", lambda: b'{"benchmarks": []}', "completed: missing"),
    ]


def guidellm_cases() -> list[tuple]:
    g = GUIDELLM
    m = "benchmarks.0.metrics.time_to_first_token_ms.successful"
    return [
        *generic_cases("guidellm", g),
        ("guidellm", "guidellm-report-version-3", lambda: mutated(g, "metadata.version", 3), "metadata.version: report version 3"),
        ("guidellm", "guidellm-version-string", lambda: mutated(g, "metadata.version", "2"), "metadata.version: must be an integer"),
        ("guidellm", "guidellm-no-tool-version", lambda: mutated(g, "metadata.guidellm_version", _DELETE), "metadata.guidellm_version: missing"),
        ("guidellm", "guidellm-no-metadata", lambda: mutated(g, "metadata", _DELETE), "metadata: missing"),
        ("guidellm", "guidellm-benchmarks-empty", lambda: mutated(g, "benchmarks", []), "benchmarks: is empty"),
        ("guidellm", "guidellm-benchmarks-object", lambda: mutated(g, "benchmarks", {}), "benchmarks: must be an array"),
        ("guidellm", "guidellm-mean-string", lambda: mutated(g, f"{m}.mean", "fast"), "time_to_first_token_ms.successful.mean: must be a number"),
        ("guidellm", "guidellm-percentile-null-object", lambda: mutated(g, f"{m}.percentiles", [1, 2]), "successful.percentiles: must be an object"),
        ("guidellm", "guidellm-request-ttft-bool", lambda: mutated(g, "benchmarks.0.requests.successful.0.time_to_first_token_ms", True),
         "requests.successful[0].time_to_first_token_ms: must be a number"),
        ("guidellm", "guidellm-request-ttft-negative", lambda: mutated(g, "benchmarks.0.requests.successful.2.inter_token_latency_ms", -1.0),
         "requests.successful[2].inter_token_latency_ms: must be at least 0"),
        ("guidellm", "guidellm-output-tokens-float", lambda: mutated(g, "benchmarks.0.requests.successful.1.output_tokens", 1.5),
         "requests.successful[1].output_tokens: must be an integer"),
        ("guidellm", "guidellm-totals-lie", lambda: mutated(g, "benchmarks.0.metrics.request_totals.successful", 99),
         "request_totals.successful: says 99"),
        ("guidellm", "guidellm-strategy-missing", lambda: mutated(g, "benchmarks.0.config.strategy", _DELETE), "config.strategy: missing"),
        ("guidellm", "guidellm-streams-zero", lambda: mutated(g, "benchmarks.0.config.strategy.streams", 0), "strategy.streams: must be at least 1"),
    ]


def aiperf_cases() -> list[tuple]:
    g = AIPERF
    return [
        *generic_cases("aiperf", g),
        ("aiperf", "aiperf-no-version", lambda: mutated(g, "aiperf_version", _DELETE), "aiperf_version: missing"),
        ("aiperf", "aiperf-version-number", lambda: mutated(g, "aiperf_version", 13), "aiperf_version: must be a string"),
        ("aiperf", "aiperf-schema-2", lambda: mutated(g, "schema_version", "2.0"), "schema_version: '2.0' is not"),
        ("aiperf", "aiperf-cancelled", lambda: mutated(g, "was_cancelled", True), "was_cancelled: the run was cancelled"),
        ("aiperf", "aiperf-ttft-seconds", lambda: mutated(g, "time_to_first_token.unit", "s"), "time_to_first_token.unit: unit 's' is not ms"),
        ("aiperf", "aiperf-ttft-no-avg", lambda: mutated(g, "time_to_first_token.avg", _DELETE), "time_to_first_token.avg: missing"),
        ("aiperf", "aiperf-p99-string", lambda: mutated(g, "inter_token_latency.p99", "5"), "inter_token_latency.p99: must be a number"),
        ("aiperf", "aiperf-no-ttft", lambda: mutated(g, "time_to_first_token", _DELETE), "time_to_first_token: missing"),
        ("aiperf+records", "aiperf-count-lies", lambda: mutated(g, "request_count.avg", 3), "request_count.avg: is 3"),
    ]


def aiperf_record_cases() -> list[tuple]:
    """Broken per-request lines (profile_export.jsonl beside a good aggregate)."""
    lines = AIPERF_JSONL.read_text().splitlines()

    def line_with(number: int, change) -> Callable[[], bytes]:
        def make() -> bytes:
            changed = list(lines)
            record = json.loads(changed[number - 1])
            change(record)
            changed[number - 1] = json.dumps(record)
            return ("\n".join(changed) + "\n").encode()
        return make

    return [
        ("aiperf-records", "aiperf-line-truncated", lambda: ("\n".join(lines[:3]) + "\n" + lines[3][:40] + "\n").encode(), "line 4: not valid JSON"),
        ("aiperf-records", "aiperf-line-ttft-unit", line_with(2, lambda r: r["metrics"]["time_to_first_token"].update(unit="s")),
         "line 2.metrics.time_to_first_token.unit: unit must be ms"),
        ("aiperf-records", "aiperf-line-ttft-string", line_with(5, lambda r: r["metrics"]["time_to_first_token"].update(value="31")),
         "line 5.metrics.time_to_first_token.value: must be a number"),
        ("aiperf-records", "aiperf-line-no-metadata", line_with(1, lambda r: r.pop("metadata")), "line 1.metadata: missing"),
        ("aiperf-records", "aiperf-line-osl-negative", line_with(3, lambda r: r["metrics"]["output_sequence_length"].update(value=-4)),
         "line 3.metrics.output_sequence_length.value: must be at least 0"),
        ("aiperf-records", "aiperf-line-array", lambda: b"[1]\n", "line 1: must be an object"),
    ]


def llama_bench_cases() -> list[tuple]:
    g = LLAMA_BENCH_JSON
    return [
        *generic_cases("llama-bench", g)[:4],
        ("llama-bench", "llama-bench-samples-mismatch", lambda: mutated(g, "0.samples_ts", [1.0]), "[0].samples_ts: has 1 entries"),
        ("llama-bench", "llama-bench-n-gen-string", lambda: mutated(g, "1.n_gen", "16"), "[1].n_gen: must be an integer"),
        ("llama-bench", "llama-bench-no-build", lambda: mutated(g, "0.build_number", _DELETE), "[0].build_number: missing"),
        ("llama-bench", "llama-bench-no-samples", lambda: mutated(g, "0.samples_ns", []), "[0].samples_ns: is empty"),
        ("llama-bench", "llama-bench-not-a-test", lambda: mutated(mutated_path(g, "0.n_prompt", 0), "0.n_gen", 0), "[0].n_gen: n_prompt and n_gen are both 0"),
        ("llama-bench", "llama-bench-avg-negative", lambda: mutated(g, "0.avg_ts", -3.0), "[0].avg_ts: must be at least 0"),
        ("llama-bench", "llama-bench-object", lambda: b'{"build_commit": "x"}', "build_number: missing"),
    ]


def mutated_path(golden: Path, dotted: str, value) -> Path:
    """A copy of `golden` with one change, as a file (for a second change on top)."""
    import tempfile

    path = Path(tempfile.mkdtemp(prefix="hostile-")) / golden.name
    path.write_bytes(mutated(golden, dotted, value))
    return path


CASES = [*vllm_cases(), *guidellm_cases(), *aiperf_cases(), *aiperf_record_cases(),
         *(llama_bench_cases() if LLAMA_BENCH_JSON.is_file() else [])]


@pytest.mark.parametrize("tool,case_id,make,expected", CASES, ids=[c[1] for c in CASES])
def test_hostile_file_is_refused_naming_the_field(tool, case_id, make, expected, tmp_path, capsys):
    source = tmp_path / "in" / "result.json"
    source.parent.mkdir()
    if tool == "aiperf-records":  # a broken records file beside the good aggregate
        tool, source = "aiperf", source.with_name("profile_export.jsonl")
        source.with_name("profile_export_aiperf.json").write_bytes(AIPERF.read_bytes())
    elif tool == "aiperf+records":  # a broken aggregate beside the good records
        tool, source = "aiperf", source.with_name("profile_export_aiperf.json")
        source.with_name("profile_export.jsonl").write_bytes(AIPERF_JSONL.read_bytes())
    source.write_bytes(make())
    out = tmp_path / "out" / "bundle"
    before = snapshot(tmp_path)
    assert run_import(tool, source, out) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    assert "Traceback" not in captured.err and str(source) in lines[0]
    assert expected in lines[0], lines[0]
    assert snapshot(tmp_path) == before  # nothing written, not even a staging directory


def test_the_hostile_corpus_is_at_least_fifty_files():
    assert len(CASES) >= 50


def test_a_file_over_the_size_limit_is_refused_before_reading(tmp_path, capsys, monkeypatch):
    from benchpack.interop import common

    monkeypatch.setattr(common, "MAX_FILE_BYTES", 1024)
    source = tmp_path / "big.json"
    source.write_bytes(b" " * 2048 + b"{}")
    assert run_import("vllm", source, tmp_path / "out") == 2
    assert "larger than" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_an_existing_out_is_never_replaced(tmp_path, capsys):
    out = tmp_path / "bundle"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    assert run_import("vllm", VLLM, out) == 2
    assert "already exists" in capsys.readouterr().err
    assert (out / "keep.txt").read_text() == "mine"
