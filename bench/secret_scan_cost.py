"""What the secret scan costs when validating a 2,000-case bundle (issue 30 item 9).

    uv run python bench/secret_scan_cost.py [--cases 2000] [--rounds 5]

Builds one bundle of `--cases` cases the way a coding pack's run makes them: a
run.jsonl with one row per case (the row of bench/bundle_validate.py plus the
text a real result carries: a model answer with Cyrillic, Greek, em dashes,
HTML entities and code, a sha256 digest, a UUID, a hex nonce, base64 of
ordinary text), a diff per case (2-12 KB of source) and a model-call log per
tenth case. Times, interleaved round by round, median and minimum wall seconds and
median CPU seconds (all threads: the layer gates run on validation's background thread):

  validate   benchpack.bundles.create.validate_bundle (every check)
  secrets    the `secrets` check alone, after the checks it needs
  layers     secret_layers.scan_layers over every file (the decoded layers alone)

`--plain` makes the rows as real results have them (no answer text). Run it on two checkouts
(before/after) to compare; figures in docs/bundles.md.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import platform
import random
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bundle_validate import _diff, _model_call, _row, write_run_files  # noqa: E402
from benchpack.bundles import secret_layers  # noqa: E402
from benchpack.bundles.checks import CHECKS, BundleContext, BundleLimits  # noqa: E402
from benchpack.bundles.create import validate_bundle  # noqa: E402

ANSWERS = [
    "Here is the fix — the loop now stops at `len(items) - 1`; see &lt;utils.py&gt; &amp; tests.",
    "Ответ: функция возвращает сумму элементов, а тест проверяет пустой список.",
    "Η συνάρτηση επιστρέφει το άθροισμα· το τεστ ελέγχει την κενή λίστα.",
    "def total(items):\n    return sum(i.price for i in items)  # O(n)\n",
    "Step 1: parse the input. Step 2: validate. Step 3: render the result – done.",
    "The SHA-256 of the archive matches; the UUID identifies the run.",
]


def _case_row(rng: random.Random, index: int) -> str:
    row = json.loads(_row(rng, index))
    row["case"] = f"case-{index:04d}"
    text = rng.choice(ANSWERS)
    row["answer_preview"] = text
    row["answer_sha256"] = hashlib.sha256(text.encode()).hexdigest()
    row["run_id"] = str(uuid.UUID(int=rng.getrandbits(128)))
    row["nonce"] = f"{rng.getrandbits(64):016x}"
    row["answer_b64"] = base64.b64encode(text.encode()).decode()
    return json.dumps(row, ensure_ascii=rng.random() < 0.5) + "\n"


def generate(root: Path, cases: int, seed: int = 5, plain: bool = False) -> Path:
    rng = random.Random(seed)
    label = "run-000"
    row = (lambda rng, i: _row(rng, i)) if plain else _case_row
    files = {"run.jsonl": "".join(row(rng, i) for i in range(cases)),
             "hardware.json": json.dumps({"platform": "linux", "cpu_count": 2, "gpus": []}, indent=2)}
    for case in range(cases):
        files[f"patch/case-{case:04d}/rep-001.diff"] = _diff(rng, rng.randint(2_000, 12_000))
        if case % 10 == 0:
            files[f"task/case-{case:04d}/rep-001.model-calls.jsonl"] = "".join(_model_call(rng, s + 1) for s in range(20))
    entries = write_run_files(root, label, files)
    manifest = {"format": "benchpack-bundle", "format_version": 1, "provenance": "self-reported",
                "created_at": "2026-01-01T00:00:00Z", "tool": {"name": "benchpack", "version": "0.1.0"},
                "runs": [{"label": label, "path": f"runs/{label}", "files": entries, "omitted": []}]}
    (root / "bundle.json").write_text(json.dumps(manifest, indent=2))
    return root


def secrets_check_seconds(root: Path, limits: BundleLimits) -> float:
    ctx = BundleContext(root=root, limits=limits)
    try:
        for registered in CHECKS:
            start = time.perf_counter()
            findings = [f for f in registered.run(ctx) if f.severity == "error"]
            if registered.name == "secrets":
                seconds = time.perf_counter() - start
            assert not findings, (registered.name, [f.to_dict() for f in findings[:3]])
    finally:
        ctx.close()
    return seconds


def layers_seconds(root: Path) -> float:
    contents = [(p.suffix, p.read_bytes()) for p in sorted(root.rglob("*")) if p.is_file()]
    start = time.perf_counter()
    for suffix, data in contents:
        documents = "lines" if suffix == ".jsonl" else "document" if suffix == ".json" else None
        hits = secret_layers.scan_layers(data, json_documents=documents)
        assert not hits, hits[:3]
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--plain", action="store_true", help="rows as real results have them: no answer text")
    args = parser.parse_args()
    secret_layers.layers_that_apply(b"warm up: build the gates")
    limits = BundleLimits()
    with tempfile.TemporaryDirectory() as tmp:
        root = generate(Path(tmp) / "bundle", args.cases, plain=args.plain)
        size = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
        count = sum(1 for p in root.rglob("*") if p.is_file())
        times: dict[str, list[float]] = {"validate": [], "secrets": [], "layers": []}
        cpu: dict[str, list[float]] = {name: [] for name in times}
        for _ in range(args.rounds):
            start, start_cpu = time.perf_counter(), time.process_time()
            report = validate_bundle(root, limits)
            times["validate"].append(time.perf_counter() - start)
            cpu["validate"].append(time.process_time() - start_cpu)
            assert report.ok, report.to_dict()["findings"][:3]
            start_cpu = time.process_time()
            times["secrets"].append(secrets_check_seconds(root, limits))
            cpu["secrets"].append(time.process_time() - start_cpu)  # includes the checks before it
            start_cpu = time.process_time()
            times["layers"].append(layers_seconds(root))
            cpu["layers"].append(time.process_time() - start_cpu)
    print(f"python {platform.python_version()}, {platform.machine()}, {args.cases} {'plain ' if args.plain else ''}cases, {count} files, "
          f"{size / 1e6:.1f} MB, {args.rounds} rounds (wall median, wall min, CPU median)")
    for name, samples in times.items():
        print(f"  {name:9s} {statistics.median(samples):7.3f} s  {min(samples):7.3f} s  {statistics.median(cpu[name]):7.3f} s")


if __name__ == "__main__":
    main()
