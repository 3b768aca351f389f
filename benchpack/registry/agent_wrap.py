"""`registry agent-wrap import`: curated hard one-shot Django/Electron wrap rows.

These cells (D-033) come from `scripts/run-agent-wrap-oneshot`, not from
ordinary `run.jsonl` results, so they arrive as a curated JSON list and are
imported idempotently by their stable label. Rows that the wrap decisions say
are not benchmark results are refused, with the decision named:

- D-039: a local-model cell run through the `pi` runner without a captured
  transcript is incomplete and must be relaunched.
- D-040: a cell on a host whose Electron binary was broken is kept, but its
  notes must say so.
- D-041: Qwen3.8 cells are labelled by the resolved `reasoning_effort`
  (`off`, `low`, `medium`, `xhigh`); its template has no `high`.
- D-042: externally terminated runs are not results, not FAIL rows.
"""

from __future__ import annotations

import json
import re
import sqlite3
from datetime import date, datetime, timezone
from pathlib import Path

from benchpack.errors import BenchpackError, Problem
from benchpack.registry.schema import open_for_write, transaction

STATUSES = ("pass", "fail")
TERMINATED_STATUSES = ("killed", "terminated", "interrupted", "aborted", "cancelled", "canceled")
QWEN38_LEVELS = ("off", "low", "medium", "xhigh")
_QWEN38 = re.compile(r"qwen[-_ ]?3\.8", re.I)
COLUMNS = (
    "label", "date", "status", "harness", "provider", "model", "thinking_level", "runner",
    "local_model", "transcript_captured", "electron_precondition_ok", "duration_s", "notes",
    "source", "imported_at", "raw_json",
)


def _text(row: dict, key: str, where: str, problems: list[Problem], file: str, required: bool) -> str | None:
    value = row.get(key)
    if isinstance(value, str) and value.strip():
        return value.strip()
    if value is None and not required:
        return None
    problems.append(Problem(file, f"{where}.{key}", "is required (a non-empty string)" if required
                            else "must be a non-empty string or null"))
    return None


def _flag(row: dict, key: str, where: str, problems: list[Problem], file: str) -> bool | None:
    value = row.get(key)
    if value is None or isinstance(value, bool):
        return value
    problems.append(Problem(file, f"{where}.{key}", "must be true, false or null"))
    return None


def check_row(row, index: int, file: str) -> tuple[dict | None, list[Problem]]:
    """One curated row -> column values, or the problems that refuse it."""
    where = f"runs[{index}]"
    if not isinstance(row, dict):
        return None, [Problem(file, where, "must be a JSON object")]
    problems: list[Problem] = []
    label = _text(row, "label", where, problems, file, True)
    if label:
        where = f"runs[{index}] ({label})"
    day = _text(row, "date", where, problems, file, True)
    if day:
        try:
            day = date.fromisoformat(day[:10]).isoformat()
        except ValueError:
            problems.append(Problem(file, f"{where}.date", "must be an ISO date (YYYY-MM-DD)"))
    status = _text(row, "status", where, problems, file, True)
    if status:
        status = status.lower()
        if status in TERMINATED_STATUSES:
            problems.append(Problem(file, f"{where}.status", f"{status!r}: an externally terminated run is not a "
                                    "benchmark result and is not recorded, not even as a fail (D-042)"))
        elif status not in STATUSES:
            problems.append(Problem(file, f"{where}.status", f"unknown status {status!r}; must be pass or fail"))
    if row.get("externally_terminated") is True:
        problems.append(Problem(file, f"{where}.externally_terminated",
                                "an externally terminated run is not a benchmark result (D-042)"))
    harness = _text(row, "harness", where, problems, file, True)
    provider = _text(row, "provider", where, problems, file, True)
    model = _text(row, "model", where, problems, file, True)
    thinking = _text(row, "thinking_level", where, problems, file, False)
    effort = _text(row, "reasoning_effort", where, problems, file, False)
    runner = _text(row, "runner", where, problems, file, False)
    notes = _text(row, "notes", where, problems, file, False)
    local = _flag(row, "local_model", where, problems, file)
    transcript = _flag(row, "transcript_captured", where, problems, file)
    electron = _flag(row, "electron_precondition_ok", where, problems, file)
    duration = row.get("duration_s")
    if duration is not None and (isinstance(duration, bool) or not isinstance(duration, (int, float)) or duration < 0):
        problems.append(Problem(file, f"{where}.duration_s", "must be a number of seconds >= 0 or null"))
    if thinking:
        thinking = thinking.lower()
    if model and _QWEN38.search(model):
        if thinking is None:
            problems.append(Problem(file, f"{where}.thinking_level", "a Qwen3.8 cell must be labelled by its "
                                    "resolved reasoning_effort: off, low, medium or xhigh (D-041)"))
        elif thinking not in QWEN38_LEVELS:
            problems.append(Problem(file, f"{where}.thinking_level", f"{thinking!r} is not a Qwen3.8 reasoning_effort; "
                                    "the template accepts only low, medium, xhigh (unset with thinking on is "
                                    "xhigh), or off (D-041)"))
        elif effort and thinking != "off" and effort.lower() != thinking:
            problems.append(Problem(file, f"{where}.thinking_level", f"{thinking!r} disagrees with reasoning_effort "
                                    f"{effort!r}; label the cell by the resolved value (D-041)"))
    if local is True and "pi" in (runner, harness) and transcript is not True:
        problems.append(Problem(file, f"{where}.transcript_captured", "a local-model pi cell without a captured "
                                "transcript is incomplete; relaunch it with --pi-mode json (D-039)"))
    if electron is False and not (notes and "electron" in notes.lower()):
        problems.append(Problem(file, f"{where}.notes", "electron_precondition_ok is false, so the notes must say "
                                "the Electron install was broken on this host (D-040)"))
    if problems:
        return None, problems
    return {
        "label": label, "date": day, "status": status, "harness": harness, "provider": provider,
        "model": model, "thinking_level": thinking, "runner": runner,
        "local_model": None if local is None else int(local),
        "transcript_captured": None if transcript is None else int(transcript),
        "electron_precondition_ok": None if electron is None else int(electron),
        "duration_s": None if duration is None else float(duration), "notes": notes,
        "raw_json": json.dumps(row, sort_keys=True, ensure_ascii=False),
    }, []


def load_curated(path: Path) -> list[dict]:
    """Parse and check a curated file; BenchpackError lists every refused row."""
    file = str(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BenchpackError(Problem(file, "", "no such file")) from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BenchpackError(Problem(file, "", f"not valid JSON ({exc})")) from None
    rows = data.get("runs") if isinstance(data, dict) else data
    if not isinstance(rows, list):
        raise BenchpackError(Problem(file, "", "must be a JSON array of runs or an object with a `runs` array"))
    problems: list[Problem] = []
    checked: list[dict] = []
    seen: dict[str, int] = {}
    for index, row in enumerate(rows):
        values, found = check_row(row, index, file)
        problems += found
        if values is None:
            continue
        if values["label"] in seen:
            problems.append(Problem(file, f"runs[{index}].label",
                                    f"duplicate label {values['label']!r} (also runs[{seen[values['label']]}])"))
        seen[values["label"]] = index
        checked.append(values)
    if problems:
        raise BenchpackError(problems)
    if not checked:
        raise BenchpackError(Problem(file, "", "has no runs"))
    return checked


def import_rows(conn: sqlite3.Connection, rows: list[dict], source: str) -> tuple[int, int]:
    """Upsert by label; returns (inserted, updated)."""
    imported_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
    sql = (
        f"INSERT INTO agent_wrap_runs ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))}) "
        "ON CONFLICT(label) DO UPDATE SET " + ", ".join(f"{c} = excluded.{c}" for c in COLUMNS[1:])
    )
    with transaction(conn):
        existing = {label for (label,) in conn.execute("SELECT label FROM agent_wrap_runs")}
        conn.executemany(sql, [
            tuple({**row, "source": source, "imported_at": imported_at}[c] for c in COLUMNS) for row in rows
        ])
    updated = sum(1 for row in rows if row["label"] in existing)
    return len(rows) - updated, updated


def import_curated(db: str | Path, curated: str | Path) -> tuple[int, int]:
    path = Path(curated)
    rows = load_curated(path)
    conn = open_for_write(db)
    try:
        return import_rows(conn, rows, str(path.resolve()))
    finally:
        conn.close()
