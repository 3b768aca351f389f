"""Another system from a real result directory: the same rows with scaled timings and a named runtime.

The catalogue tests need several systems and runtime versions; there are a
handful of real result directories. A variant is a copy of one whose timings
are scaled by `speed` (2.0: twice as fast), whose run metadata names a
runtime (and so a system), optionally with another RAM size (another hardware
class) or relabelled as a coding pack's repo task with given verdicts. It
goes through the real bundle → intake → validate → approve path like any run.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.data_paths import REAL_RESULTS


def make_variant(results: Path, base: str, name: str, speed: float = 1.0, runtime=("llama.cpp", "b100"),
                 ram_mb: int | None = None, quantization: str = "Q4_K_M", repo_task=None, passed=None,
                 suspicious: dict[int, list[str]] | None = None) -> str:
    """Writes results/name and returns name. `repo_task=(pack_id, version, case)`; `passed`: one verdict per row;
    `suspicious`: {row index: offending lines} — those rows' verdict is `suspicious` (failed, with the lines)."""
    target = results / name
    shutil.copytree(REAL_RESULTS / base, target)
    rows = [json.loads(line) for line in (target / "run.jsonl").read_text().splitlines() if line.strip()]
    for row in rows:
        timing = row.get("timing") or {}
        output = (row.get("tokens") or {}).get("output")
        if timing.get("tpot_s") is None and isinstance(output, int) and output > 1 and timing.get("ttft_s") is not None:
            # The seed's rows predate tpot_s; a variant gets one (the gaps after the first token, evenly
            # spread), so decode (1/tpot_s) has a value on the pages under test.
            timing["tpot_s"] = (timing["wall_s"] - timing["ttft_s"]) / (output - 1)
        for key in ("wall_s", "ttft_s", "tpot_s"):
            if isinstance(timing.get(key), (int, float)):
                timing[key] = timing[key] / speed
        for key in ("decode_tps", "total_tps", "prefill_tps"):
            if isinstance(timing.get(key), (int, float)):
                timing[key] = timing[key] * speed
    if repo_task is not None:
        for row, verdict in zip(rows, passed or [None] * len(rows)):
            row["pack"] = {"id": repo_task[0], "version": repo_task[1]}
            row["case"] = repo_task[2]
            row["scoring"] = {"mode": "verify-script", "passed": verdict}
        for index, lines in (suspicious or {}).items():
            rows[index]["scoring"] = {"mode": "verify-script", "passed": False}
            rows[index]["repo_task"] = {"status": "suspicious", "verify_exit_code": 1, "suspicious": lines,
                                        "failure_reason": "suspicious: the answer adds introspection of its caller "
                                                          "or environment (see repo_task.suspicious)"}
    (target / "run.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    # A variant's figures are made up (a real run's rows, rescaled and relabelled as another system), and the
    # run metadata says so: plausibility leaves it unchecked ("a demo run") rather than judging invented speeds
    # against the Apple M5 Max's bounds — which a variant twice as fast as the seed's cache-served prefill breaks.
    metadata = {"runtime": {"name": runtime[0], "version": runtime[1]}, "model": {"quantization": quantization},
                "demo": True}
    (target / "run-metadata.json").write_text(json.dumps(metadata))
    if ram_mb is not None:
        hardware = json.loads((target / "hardware.json").read_text())
        hardware["ram_mb"] = ram_mb
        (target / "hardware.json").write_text(json.dumps(hardware))
    for path in [target, *target.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return name
