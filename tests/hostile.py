"""Synthetic result directories shaped like the runner's output, for bundle tests."""

from __future__ import annotations

import json
from pathlib import Path

REAL_RESULTS = Path(__file__).resolve().parents[2] / "shared" / "data" / "real-results"

SAFE_MODEL_CALL = {"schema_version": 1, "sequence": 1, "model": "test-model", "ok": True, "endpoint": "local-llama", "prompt_tokens": 12}


def row(case: str = "fix-repo", repetition: int = 1, **extra) -> dict:
    base = {
        "pack": {"id": "patch-from-failure", "version": "0.1.0"},
        "case": case,
        "adapter": "openai-chat",
        "endpoint": "http://127.0.0.1:8081/v1/chat/completions",
        "model": "qwen2.5-0.5b-instruct-q4_k_m",
        "ok": True,
        "timing": {"wall_s": 1.5, "ttft_s": 0.2, "prefill_tps": 500.0, "decode_tps": 40.0, "total_tps": 30.0},
        "tokens": {"prompt": 100, "output": 45, "cached_prompt": 0, "source": "usage"},
        "resources": {"memory_mb": None, "gpu_memory_mb": None},
        "scoring": {"mode": "verify-script", "passed": True},
        "raw": {"request_path": f"raw/{case}.request.json", "response_path": f"raw/{case}.response.json"},
        "patch": {"path": f"patch/{case}/rep-{repetition:03d}.diff"},
        "repetition": repetition,
    }
    base.update(extra)
    return base


def write_result_dir(path: Path, rows: list[dict] | None = None, model_calls: list[dict] | None = None) -> Path:
    """A repo-task style result dir with raw/, workspace/, task logs, a patch and model calls."""
    rows = rows if rows is not None else [row()]
    path.mkdir(parents=True)
    (path / "run.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    (path / "hardware.json").write_text(json.dumps({"platform": "linux", "cpu_count": 2, "gpus": []}), encoding="utf-8")
    (path / "run-metadata.json").write_text(json.dumps({"runtime": {"name": "llama.cpp"}, "notes": "quiet host"}), encoding="utf-8")
    (path / "summary.md").write_text("# summary\n", encoding="utf-8")
    for r in rows:
        case, rep = r["case"], r.get("repetition", 1)
        for directory, name, text in [
            ("raw", f"{case}.request.json", '{"messages": []}'),
            ("raw", f"{case}.response.json", '{"choices": []}'),
            (f"patch/{case}", f"rep-{rep:03d}.diff", "--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\n"),
            (f"task/{case}", f"rep-{rep:03d}.stdout.log", "applied\n"),
            (f"workspace/{case}/rep-{rep:03d}", "x.py", "b\n"),
        ]:
            (path / directory).mkdir(parents=True, exist_ok=True)
            (path / directory / name).write_text(text, encoding="utf-8")
        calls = model_calls if model_calls is not None else [SAFE_MODEL_CALL]
        (path / f"task/{case}/rep-{rep:03d}.model-calls.jsonl").write_text(
            "".join(json.dumps(call) + "\n" for call in calls), encoding="utf-8"
        )
    return path


def snapshot(root: Path) -> dict[str, tuple[int, int]]:
    """Every path under root with its mode and size, to prove nothing else was written."""
    result = {}
    for path in sorted(root.rglob("*")):
        info = path.lstat()
        result[path.relative_to(root).as_posix()] = (info.st_mode, info.st_size if not path.is_dir() else 0)
    return result
