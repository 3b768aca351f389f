"""Result records: the `run.jsonl` row envelope, durable appends, `summary.md`.

Reading result directories lives in `benchpack.results.resultdir`; the names are
re-exported here because docs/internals.md lists them under results.py.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import IO, Any, Iterable, Protocol

from benchpack.results import run_metadata as run_metadata_module
from benchpack.results.row_keys import TIMING_KEYS, TOKEN_KEYS  # the row contract's keys, without msgspec
from benchpack.results.resultdir import (  # noqa: F401  (re-exported)
    ResultDir,
    field,
    load_result_dir,
    read_rows,
)

REPO_TASK_FIELDS = ("workspace", "patch", "task", "verify", "repo_task")
SUMMARY_FILE = "summary.md"
DASH = "—"


class PackInfo(Protocol):
    id: str
    version: str
    description: str


def _known(values: dict | None, keys: Iterable[str]) -> dict:
    """Every documented key present (null when the adapter had no value), extras kept after."""
    values = dict(values or {})
    shaped = {key: values.pop(key, None) for key in keys}
    shaped.update(values)
    return shaped


def build_row(
    *,
    pack: PackInfo,
    case_id: str,
    adapter_id: str,
    endpoint: str,
    model: str,
    result: Any,
    scoring: dict | None,
    raw: dict,
    repetition: int | None = None,
    resources: dict | None = None,
    extra: dict | None = None,
) -> dict:
    """One measured execution as a `run.jsonl` row (see docs/internals.md).

    `result` is an AdapterResult. `extra` carries repo-task fields; a
    `scoring` key in it replaces the output-text score (verify-script).
    """
    row: dict[str, Any] = {
        "pack": {"id": pack.id, "version": pack.version},
        "case": case_id,
        "adapter": adapter_id,
        "endpoint": endpoint,
        "model": model,
        "ok": bool(result.ok),
    }
    if not result.ok:
        row["error"] = result.error or "adapter reported a failure without a message"
    row["timing"] = _known(result.timing, TIMING_KEYS)
    row["tokens"] = _known(result.tokens, TOKEN_KEYS)
    row["backend"] = result.backend
    row["resources"] = {"memory_mb": None, "gpu_memory_mb": None, **(resources or {})}
    row["scoring"] = scoring
    row["raw"] = dict(raw)
    if repetition is not None:
        row["repetition"] = repetition
    for key, value in (extra or {}).items():
        row[key] = value
    return row


def append_row(fh: IO[str], row: dict) -> None:
    """Write one row and force it to disk, so an interrupted run leaves valid rows."""
    fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    fh.flush()
    os.fsync(fh.fileno())


class RowLog:
    """`run.jsonl` open for a run's rows: each row reaches the OS when it is appended, the disk in batches.

    `append` writes the row and flushes it to the operating system at once, so a crash of the
    process, a kill or Ctrl-C loses no row that was appended. `fsync` (the disk's journal: ~0.1 ms of
    CPU and ~0.3 ms of waiting per row on ext4) runs when at least `sync_interval_s` passed since the
    last one, and on `sync()` / `close()`, which the runner calls however the run ends. What a power
    loss can take is therefore the rows of the last half second at most — and when the rows come
    faster than that and the next request is a long one, those rows until it ends
    (docs/measurement.md, "The whole process's cost").
    """

    SYNC_INTERVAL_S = 0.5

    def __init__(self, path: Path, sync_interval_s: float = SYNC_INTERVAL_S) -> None:
        self.path = Path(path)
        self._file = open(self.path, "ab")
        self._interval = sync_interval_s
        self._synced_at = time.monotonic()
        self._unsynced = False

    def append(self, row: dict) -> None:
        self._file.write((json.dumps(row, ensure_ascii=False) + "\n").encode("utf-8"))
        self._file.flush()  # in the OS now: only a power loss before the next fsync could take it
        self._unsynced = True
        if time.monotonic() - self._synced_at >= self._interval:
            self.sync()

    def sync(self) -> None:
        if self._unsynced and not self._file.closed:
            os.fsync(self._file.fileno())
            self._unsynced = False
        self._synced_at = time.monotonic()

    def close(self) -> None:
        if self._file.closed:
            return
        try:
            self.sync()
        finally:
            self._file.close()

    def __enter__(self) -> RowLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# --- summary.md -------------------------------------------------------------


def _cell(value: Any) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def _number(value: Any, digits: int) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return DASH
    return f"{value:.{digits}f}"


def scoring_cell(scoring: Any) -> str:
    if not isinstance(scoring, dict) or not scoring.get("mode"):
        return DASH
    passed = scoring.get("passed")
    verdict = "pass" if passed is True else "fail" if passed is False else DASH
    return f"{scoring['mode']}: {verdict}"


def case_label(row: dict) -> str:
    repetition = row.get("repetition")
    return f"{row.get('case')}#{repetition}" if repetition is not None else str(row.get("case"))


def host_lines(hardware: dict | None) -> list[str]:
    hardware = hardware or {}
    lines = [f"Host: `{hardware.get('hostname') or 'unknown'}` ({hardware.get('platform') or 'unknown'})"]
    if hardware.get("cpu_model"):
        lines.append(f"CPU: {hardware['cpu_model']}")
    if hardware.get("ram_mb"):
        lines.append(f"RAM: {hardware['ram_mb']} MB")
    gpus = [g for g in hardware.get("gpus") or [] if isinstance(g, dict)]
    if gpus:
        names = [
            f"{g.get('model', '?')} ({g['vram_mb']} MB)" if g.get("vram_mb") else str(g.get("model", "?"))
            for g in gpus
        ]
        lines.append("GPU: " + ", ".join(names))
    return lines


def results_table(rows: list[dict]) -> list[str]:
    # The first seven columns are the historical table; ttft/tpot are appended
    # so anything reading columns by position keeps working.
    lines = [
        "| case | adapter | model | ok | wall_s | total_tps | scoring | ttft_s | tpot_s |",
        "|------|---------|-------|----|--------|-----------|---------|--------|--------|",
    ]
    for row in rows:
        cells = [
            case_label(row),
            row.get("adapter"),
            row.get("model"),
            "yes" if row.get("ok") else "no",
            _number(field(row, "timing.wall_s"), 3),
            _number(field(row, "timing.total_tps"), 2),
            scoring_cell(row.get("scoring")),
            _number(field(row, "timing.ttft_s"), 3),
            _number(field(row, "timing.tpot_s"), 4),
        ]
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return lines


def error_lines(rows: list[dict]) -> list[str]:
    failed = [row for row in rows if not row.get("ok")]
    if not failed:
        return []
    lines = ["## Errors", ""]
    lines += [f"- {case_label(row)}: {_cell(row.get('error') or 'failed')}" for row in failed]
    return lines


def render_summary(
    pack: PackInfo,
    rows: list[dict],
    hardware: dict | None,
    run_metadata: dict | None,
    extra_sections: list[str] | None = None,
) -> str:
    lines = [f"# {pack.id} ({pack.version})", ""]
    if pack.description:
        lines += [pack.description, ""]
    lines += host_lines(hardware)
    lines += run_metadata_module.summary_lines(run_metadata)
    lines += [""] + results_table(rows)
    for block in [error_lines(rows), *[[s.rstrip("\n")] for s in extra_sections or []]]:
        if block:
            lines += [""] + block
    return "\n".join(lines) + "\n"


def write_summary(
    result_dir: Path,
    pack: PackInfo,
    rows: list[dict],
    hardware: dict | None,
    run_metadata: dict | None,
    extra_sections: list[str] | None = None,
) -> Path:
    """Write summary.md. `extra_sections` are Markdown blocks appended after the table."""
    path = Path(result_dir) / SUMMARY_FILE
    path.write_text(render_summary(pack, rows, hardware, run_metadata, extra_sections), encoding="utf-8")
    return path
