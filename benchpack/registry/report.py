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
from benchpack.results.resultdir import ResultDir

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


def pack_groups(results: list[ResultDir], pack: str | None = None) -> list[tuple[str, list[ResultDir]]]:
    """One group per pack id, each with only that pack's rows of every run that has it.

    A report over runs of different packs would otherwise list every case of
    every pack for every run, most of them missing; per pack, the runs that
    share its cases sit side by side."""
    order: dict[str, None] = {}
    for result in results:
        for row in result.rows:
            pack_id = (row.get("pack") or {}).get("id") if isinstance(row.get("pack"), dict) else None
            order.setdefault(str(pack_id), None)
    groups = []
    for pack_id in order:
        if pack is not None and pack_id != pack:
            continue
        members = []
        for result in results:
            rows = [r for r in result.rows if str((r.get("pack") or {}).get("id") if isinstance(r.get("pack"), dict)
                                                 else None) == pack_id]
            if rows:
                members.append(ResultDir(path=result.path, rows=rows, hardware=result.hardware,
                                         run_metadata=result.run_metadata))
        groups.append((pack_id, members))
    return groups


def registry_report(conn: sqlite3.Connection, labels: list[str] | None = None, pack: str | None = None):
    """(blocks, data): one report section per pack, for the terminal, Markdown or JSON."""
    from benchpack.reporting.compare import compare_runs
    from benchpack.reporting.report import report_blocks  # the shared renderer; imported late to keep this module light
    from benchpack.reporting.document import Heading, Paragraph

    run_ids = select_run_ids(conn, labels, pack)
    if not run_ids:
        raise BenchpackError(Problem("registry", "", "no runs match; import result directories first"))
    groups = pack_groups(load_result_dirs(conn, run_ids), pack)
    blocks = [Heading("Benchpack report", 1),
              Paragraph(f"{len(run_ids)} run(s), {len(groups)} pack(s): one section per pack, with each run's "
                        "rows of that pack.", muted=True)]
    data = {"packs": []}
    for pack_id, members in groups:
        section = report_blocks(members, model_call_summarizer=None)
        section[0] = Heading(f"Pack: {pack_id}", 1)
        blocks += section
        data["packs"].append({"pack": pack_id, "comparison": compare_runs(members).to_dict()})
    return blocks, data


def render_registry_report(conn: sqlite3.Connection, labels: list[str] | None = None, pack: str | None = None) -> str:
    from benchpack.reporting.document import to_markdown

    blocks, _ = registry_report(conn, labels, pack)
    return to_markdown(blocks)
