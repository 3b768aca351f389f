"""Reading result directories: `run.jsonl`, `hardware.json`, `run-metadata.json`.

Readers accept rows written by older implementations of the format (missing
`cached_prompt`, `ttfb_s`, `tpot_s`, `source`, `backend`): a missing field
reads as null through `field()`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

# msgspec.Struct, not @dataclass: a dataclass compiles its generated methods from source text in every
# process (~0.4 ms a class); a Struct is built in C (docs/measurement.md, "Issue 34 item 2: stop 43").
import msgspec

from benchpack.errors import BenchpackError, Problem

RUN_FILE = "run.jsonl"
HARDWARE_FILE = "hardware.json"
RUN_METADATA_FILE = "run-metadata.json"
SUMMARY_FILE = "summary.md"


class ResultDir(msgspec.Struct):
    path: Path
    rows: list[dict] = msgspec.field(default_factory=list)
    hardware: dict | None = None
    run_metadata: dict | None = None

    @property
    def label(self) -> str:
        return self.path.name

    def pack_ids(self) -> list[str]:
        seen: dict[str, None] = {}
        for row in self.rows:
            seen.setdefault(f"{field(row, 'pack.id')} ({field(row, 'pack.version')})", None)
        return list(seen)


def field(row: dict, dotted: str, default: Any = None) -> Any:
    """`field(row, "timing.ttft_s")`: nested lookup where anything missing is `default`."""
    value: Any = row
    for part in dotted.split("."):
        if not isinstance(value, dict) or part not in value:
            return default
        value = value[part]
    return value


def read_rows(path: Path) -> list[dict]:
    """Parse a run.jsonl file; every bad line is reported with its line number."""
    problems: list[Problem] = []
    rows: list[dict] = []
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise BenchpackError(Problem(str(path), "", "no such file")) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise BenchpackError(Problem(str(path), "", f"cannot read: {exc}")) from None
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(Problem(str(path), f"line {number}", f"not valid JSON ({exc.msg})"))
            continue
        if not isinstance(row, dict):
            problems.append(Problem(str(path), f"line {number}", "not a JSON object"))
            continue
        rows.append(row)
    if problems:
        raise BenchpackError(problems)
    return rows


def _read_optional_object(path: Path) -> dict | None:
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BenchpackError(Problem(str(path), "", f"not valid JSON ({exc})")) from None
    if not isinstance(data, dict):
        raise BenchpackError(Problem(str(path), "", "must be a JSON object"))
    return data


def load_result_dir(path: str | Path, rows: list[dict] | None = None) -> ResultDir:
    """The result directory at `path`. `rows`: its run.jsonl already parsed by read_rows (the runner reads
    the file back when a run ends), so the closing summary does not parse the same rows a second time."""
    result_path = Path(path)
    if not result_path.is_dir():
        raise BenchpackError(Problem(str(result_path), "", "not a result directory"))
    return ResultDir(
        path=result_path,
        rows=read_rows(result_path / RUN_FILE) if rows is None else rows,
        hardware=_read_optional_object(result_path / HARDWARE_FILE),
        run_metadata=_read_optional_object(result_path / RUN_METADATA_FILE),
    )
