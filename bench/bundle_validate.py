"""Bundle validation throughput: `validate_bundle` vs a plain sha256 + json.loads loop.

Generates a large synthetic bundle (run.jsonl rows, patch diffs, model-call
logs), then times, interleaved round by round on the same files:

- validate:  `benchpack.bundles.create.validate_bundle` (all checks, secret scan included);
- baseline:  read every file, sha256 it, and json.loads every JSON document / JSONL line
             (diffs are only hashed) — the least any honest validator must do.

Reports MB/s of artifact bytes for both and their ratio, per bundle mix, and
where validation spends its time: each check run on its own over a fresh
context, in `CHECKS` order, and the floors (sha256 and the secret prefilter
alone over the same bytes) — median seconds over the rounds.
The target is >= 100 MB/s for validation on the mixed bundle.

    uv run python bench/bundle_validate.py [--mb 100] [--rounds 3]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from benchpack.bundles.checks import CHECKS, BundleContext, BundleLimits
from benchpack.bundles.create import validate_bundle
from benchpack.bundles.secrets_scan import might_contain_secret

WORDS = "def return self value total items index count result parse render update token cache prompt model case".split()
# Share of bytes per role in each mix.
MIXES = {
    "mixed": {"run": 0.45, "patch": 0.5, "model-calls": 0.05},
    "rows-only": {"run": 1.0},
    "diffs-only": {"run": 0.02, "patch": 0.98},
}


def _row(rng: random.Random, index: int) -> str:
    wall = rng.uniform(0.2, 30.0)
    ttft = wall * rng.uniform(0.01, 0.3)
    prompt, output = rng.randint(20, 8000), rng.randint(1, 2000)
    return json.dumps({
        "pack": {"id": "runtime-sweep", "version": "0.3.1"}, "case": f"case-{index % 40}",
        "adapter": "openai-chat", "endpoint": "http://127.0.0.1:8081/v1/chat/completions",
        "model": "qwen2.5-0.5b-instruct-q4_k_m", "ok": True,
        "timing": {"wall_s": wall, "ttft_s": ttft, "prefill_tps": round(prompt / ttft, 4),
                   "decode_tps": round(output / (wall - ttft), 4), "total_tps": round(output / wall, 4),
                   "ttfb_s": ttft * 0.9, "ttft_any_s": ttft, "tpot_s": (wall - ttft) / output},
        "tokens": {"prompt": prompt, "output": output, "cached_prompt": 0, "source": "usage"},
        "backend": None, "resources": {"memory_mb": None, "gpu_memory_mb": None},
        "scoring": {"mode": "contains", "passed": rng.random() > 0.3},
        "raw": {"request_path": f"raw/case-{index % 40}.rep-{index:03d}.request.json",
                "response_path": f"raw/case-{index % 40}.rep-{index:03d}.response.json"},
        "repetition": index + 1,
    }) + "\n"  # fmt: skip


def _diff(rng: random.Random, size: int) -> str:
    lines = ["--- a/app/module.py", "+++ b/app/module.py"]
    total = 0
    while total < size:
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 10)))
        line = f"{rng.choice('+- ')}    {words}({rng.randint(0, 999)})"
        lines.append(line)
        total += len(line) + 1
    return "\n".join(lines) + "\n"


def _model_call(rng: random.Random, sequence: int) -> str:
    return json.dumps({
        "schema_version": 1, "sequence": sequence, "model": "qwen2.5-coder-7b", "ok": True,
        "duration_s": rng.uniform(0.1, 9.0), "adapter": "openai-chat", "endpoint": "local-llama",
        "finish_reason": "stop", "prompt_tokens": rng.randint(10, 9000), "output_tokens": rng.randint(1, 900),
    }) + "\n"  # fmt: skip


def write_run_files(root: Path, label: str, files: dict[str, str]) -> list[dict]:
    """Write one run's files under runs/<label>/ and return their manifest entries (role, digest, size)."""
    entries = []
    for relative, text in files.items():
        data = text.encode()
        target = root / "runs" / label / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        role = {"run.jsonl": "run", "hardware.json": "hardware"}.get(relative) or (
            "patch" if relative.startswith("patch/") else "model-calls")
        entries.append({"path": relative, "role": role, "sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)})
    return entries

def generate(root: Path, total_bytes: int, mix: dict[str, float], seed: int = 7) -> Path:
    rng = random.Random(seed)
    runs_needed = max(1, total_bytes // (40 * 1024 * 1024))  # keep each file under the per-file limit
    manifest = {"format": "benchpack-bundle", "format_version": 1, "provenance": "self-reported",
                "created_at": "2026-01-01T00:00:00Z", "tool": {"name": "benchpack", "version": "0.1.0"}, "runs": []}
    per_run = total_bytes // runs_needed
    for run_index in range(runs_needed):
        label = f"run-{run_index:03d}"
        files: dict[str, str] = {}
        rows, size, i = [], 0, 0
        while size < per_run * mix.get("run", 0):
            rows.append(_row(rng, i))
            size += len(rows[-1])
            i += 1
        files["run.jsonl"] = "".join(rows)
        patch_budget = per_run * mix.get("patch", 0)
        case = 0
        while patch_budget > 0:
            text = _diff(rng, min(int(patch_budget), rng.randint(20_000, 400_000)))
            files[f"patch/case-{case}/rep-001.diff"] = text
            patch_budget -= len(text)
            case += 1
        calls_budget = per_run * mix.get("model-calls", 0)
        case = 0
        while calls_budget > 0:
            lines = "".join(_model_call(rng, s + 1) for s in range(2000))
            files[f"task/case-{case}/rep-001.model-calls.jsonl"] = lines
            calls_budget -= len(lines)
            case += 1
        files["hardware.json"] = json.dumps({"platform": "linux", "cpu_count": 2, "gpus": []})
        manifest["runs"].append({"label": label, "path": f"runs/{label}", "files": write_run_files(root, label, files),
                                 "omitted": []})
    (root / "bundle.json").write_text(json.dumps(manifest, indent=2))
    return root


def baseline(root: Path) -> int:
    """Read, sha256 and json.loads every artifact; returns the bytes handled."""
    total = 0
    for path in sorted(root.rglob("*")):
        if not path.is_file():
            continue
        data = path.read_bytes()
        total += len(data)
        hashlib.sha256(data).hexdigest()
        if path.suffix == ".jsonl":
            for line in data.decode("utf-8").splitlines():
                if line:
                    json.loads(line)
        elif path.suffix == ".json":
            json.loads(data)
        else:
            data.decode("utf-8")
    return total


def check_seconds(root: Path, limits: BundleLimits) -> dict[str, float]:
    """Seconds per check, run the way validate_bundle runs them on a valid bundle."""
    ctx = BundleContext(root=root, limits=limits)
    seconds = {}
    try:
        for registered in CHECKS:
            start = time.perf_counter()
            findings = list(registered.run(ctx))
            seconds[registered.name] = time.perf_counter() - start
            assert not [f for f in findings if f.severity == "error"], findings[:3]
    finally:
        ctx.close()
    return seconds


def floors(root: Path) -> dict[str, float]:
    """Seconds for the two whole-bundle passes no validation can skip, each alone on the same bytes."""
    contents = [path.read_bytes() for path in sorted(root.rglob("*")) if path.is_file()]
    seconds = {}
    for name, work in (("sha256", lambda data: hashlib.sha256(data).digest()), ("secret prefilter", might_contain_secret)):
        start = time.perf_counter()
        for data in contents:
            work(data)
        seconds[name] = time.perf_counter() - start
    return seconds


def measure(root: Path, rounds: int) -> dict:
    limits = BundleLimits(max_total_bytes=4 * 1024**3)
    size = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
    timings: dict[str, list[float]] = {"validate": [], "baseline": []}
    per_check: dict[str, list[float]] = {}
    for _ in range(rounds):
        for name, seconds in {**check_seconds(root, limits), **floors(root)}.items():
            per_check.setdefault(name, []).append(seconds)
        for name in ("baseline", "validate"):
            start = time.perf_counter()
            if name == "validate":
                report = validate_bundle(root, limits)
                assert report.ok, report.to_dict()["findings"][:3]
            else:
                baseline(root)
            timings[name].append(time.perf_counter() - start)
    mb = size / 1e6
    medians = {name: statistics.median(values) for name, values in timings.items()}
    return {"mb": mb, "validate": mb / medians["validate"], "baseline": mb / medians["baseline"],
            "ratio": medians["baseline"] / medians["validate"],
            "checks": {name: statistics.median(values) for name, values in per_check.items()}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=100.0, help="artifact megabytes per generated bundle")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--mix", choices=sorted(MIXES), action="append", help="bundle mixes (default: all)")
    args = parser.parse_args()
    print(f"Python {platform.python_version()}, {platform.system()} {platform.release()}, {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.1f} at the start", file=sys.stderr)
    print("| bundle mix | MB | validate MB/s | baseline MB/s | validate / baseline |")
    print("|---|---|---|---|---|")
    missed = False
    per_check: dict[str, dict[str, float]] = {}
    for mix in args.mix or list(MIXES):
        root = Path(tempfile.mkdtemp(prefix=f"bench-bundle-{mix}-"))
        try:
            generate(root / "bundle", int(args.mb * 1e6), MIXES[mix])
            figures = measure(root / "bundle", args.rounds)
        finally:
            shutil.rmtree(root, ignore_errors=True)
        print(f"| {mix} | {figures['mb']:.0f} | {figures['validate']:.0f} | {figures['baseline']:.0f} | {figures['ratio']:.2f} |", flush=True)
        missed |= mix == "mixed" and figures["validate"] < 100
        per_check[mix] = figures["checks"]
    mixes = list(per_check)
    print(f"\nSeconds per check (median of {args.rounds} rounds, each check run alone; the secret prefilter runs on a\n"
          "background thread from the first read, so its time shows up in the checks it overlaps; the last two\n"
          "rows are single-threaded floors over all the bytes, for reference):\n")
    print("| check | " + " | ".join(mixes) + " |")
    print("|---|" + "---|" * len(mixes))
    for check in per_check[mixes[0]]:
        print(f"| {check} | " + " | ".join(f"{per_check[mix][check]:.3f}" for mix in mixes) + " |")
    print(f"\nload average {os.getloadavg()[0]:.1f} at the end", file=sys.stderr)
    return 1 if missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
