"""`registry report`: the ordinary report, rebuilt from registry rows alone.

Each run becomes a `ResultDir` whose rows are the stored `raw_json` and whose
hardware/run metadata are the stored JSON. Its path is a `registry:` path
that never exists on disk, so the shared renderer finds no patch files or
model-call logs: artifact-only sections are omitted and patch sizes read as
unknown (D-029), and nothing outside the database is ever opened.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from benchpack.errors import BenchpackError, Problem
from benchpack.resultdir import ResultDir

REGISTRY_ROOT = Path("registry:")


def registry_path(label: str) -> Path:
    return REGISTRY_ROOT / label.replace("/", "_")


def select_run_ids(conn: sqlite3.Connection, labels: list[str] | None = None, pack: str | None = None) -> list[int]:
    sql, params = "SELECT id, label FROM runs", []
    if pack:
        sql += " WHERE EXISTS (SELECT 1 FROM result_rows r WHERE r.run_id = runs.id AND r.pack_id = ?)"
        params.append(pack)
    found = conn.execute(sql + " ORDER BY id", params).fetchall()
    if not labels:
        return [run_id for run_id, _ in found]
    by_label: dict[str, list[int]] = {}
    for run_id, label in found:
        by_label.setdefault(label, []).append(run_id)
    missing = [label for label in labels if label not in by_label]
    if missing:
        raise BenchpackError([Problem("registry", "--run", f"no run labelled {label!r}") for label in missing])
    return [run_id for label in labels for run_id in by_label[label]]


def load_result_dirs(conn: sqlite3.Connection, run_ids: list[int]) -> list[ResultDir]:
    results = []
    for run_id in run_ids:
        label, hardware_json, metadata_json = conn.execute(
            "SELECT label, hardware_json, run_metadata_json FROM runs WHERE id = ?", (run_id,)
        ).fetchone()
        rows = [json.loads(text) for (text,) in conn.execute(
            "SELECT raw_json FROM result_rows WHERE run_id = ? ORDER BY line", (run_id,)
        )]
        results.append(ResultDir(
            path=registry_path(label),
            rows=rows,
            hardware=json.loads(hardware_json) if hardware_json else None,
            run_metadata=json.loads(metadata_json) if metadata_json else None,
        ))
    return results


def render_registry_report(conn: sqlite3.Connection, labels: list[str] | None = None, pack: str | None = None) -> str:
    from benchpack.report import render_report  # the shared renderer; imported late to keep this module light

    run_ids = select_run_ids(conn, labels, pack)
    if not run_ids:
        raise BenchpackError(Problem("registry", "", "no runs match; import result directories first"))
    return render_report(load_result_dirs(conn, run_ids), model_call_summarizer=None)
