"""What every importer shares: a strict reader for other tools' files, and the imported run.

Other tools' result files are input from outside: each one is read with the
same rules as a bundle (finite numbers only, no duplicate keys, bounded size
and nesting) and every field an importer uses is checked for type and range
where it is read. The first bad field stops the import with one `Problem`
naming the file and the field (`benchmarks[0].metrics.ttft.successful.mean`),
so the CLI prints one line and exits 2; nothing is written before the whole
file has been read.

An imported run is never a Benchpack measurement. Its rows say so in three
places a reader cannot miss: `adapter` is `imported-<tool>`, `pack.id` is
`imported-<tool>`, and `backend.imported` names the tool, its version and the
source file's digest; run-metadata.json carries the same `imported` section
with the tool's own aggregate figures, copied unchanged.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from benchpack.errors import BenchpackError, Problem

# A result file bigger than this is refused before it is read: the largest real
# files (GuideLLM with every request kept, AIPerf per-request JSONL of a long
# sweep) are tens of MB.
MAX_FILE_BYTES = 256 * 1024 * 1024
# Nesting deeper than this is not a result file; refused before json recurses.
MAX_DEPTH = 64
# Per-request rows an import may write (a bundle's own row limit is larger).
MAX_ROWS = 1_000_000
# A string field longer than this is refused (model names, versions, labels).
MAX_TEXT = 512

TOOLS = ("vllm", "guidellm", "aiperf", "llama-bench")


class ImportRefused(BenchpackError):
    """A result file that cannot be imported: one problem, naming file and field."""


@dataclass
class Imported:
    """What an importer read from one tool's file, before it becomes a result directory."""

    tool: str
    tool_version: str | None  # None: the file does not record it (vLLM)
    source_name: str
    source_sha256: str
    model: str | None
    rows: list[dict] = field(default_factory=list)
    # Benchpack metric name -> the tool's own aggregate for that figure, where the
    # definitions agree ({"mean": …, "median": …, "p99": …, "count": …}, seconds).
    figures: dict[str, dict] = field(default_factory=dict)
    # The tool's own figures under the tool's own names (units in the name), unchanged.
    tool_figures: dict[str, Any] = field(default_factory=dict)
    # How the tool ran (its config as recorded), for the reader; never ranked.
    settings: dict[str, Any] = field(default_factory=dict)
    # What the file cannot tell (hardware, runtime, server flags …).
    unknown: list[str] = field(default_factory=list)
    runtime: dict[str, Any] | None = None  # what the file says about the server, if anything

    @property
    def label(self) -> str:
        version = self.tool_version or "(version not recorded)"
        return f"imported from {self.tool} {version}"


# --- strict JSON ----------------------------------------------------------------------


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text[:40]} is out of range")
    return value


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > 20:  # no count or timestamp a tool writes needs more
        raise ValueError(f"an integer has too many digits ({len(text)})")
    return int(text)


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict:
    result: dict = {}
    for key, value in pairs:
        if key in result:
            raise ValueError(f"duplicate key {key[:60]!r}")
        result[key] = value
    return result


def _nesting_depth_exceeds(data: bytes, limit: int) -> bool:
    """Whether brackets outside strings nest deeper than `limit` (checked before json recurses)."""
    depth = 0
    in_string = escaped = False
    for byte in data:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:  # backslash
                escaped = True
            elif byte == 0x22:
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in (0x5B, 0x7B):
            depth += 1
            if depth > limit:
                return True
        elif byte in (0x5D, 0x7D):
            depth -= 1
    return False


def parse_json_text(file: str, data: bytes, where: str = "") -> Any:
    """One JSON value from `data`, strictly: UTF-8, finite numbers, no duplicate keys, bounded depth."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ImportRefused(Problem(file, where, f"not UTF-8 (byte {exc.start})")) from None
    if b"[" in data or b"{" in data:
        if _nesting_depth_exceeds(data, MAX_DEPTH):
            raise ImportRefused(Problem(file, where, f"nested deeper than {MAX_DEPTH} levels"))
    try:
        return json.loads(text, parse_constant=_refuse_constant, parse_float=_finite_float,
                          parse_int=_bounded_int, object_pairs_hook=_no_duplicates)
    except json.JSONDecodeError as exc:
        position = f"line {exc.lineno} column {exc.colno}" if not where else f"column {exc.colno}"
        raise ImportRefused(Problem(file, where, f"not valid JSON ({exc.msg} at {position})")) from None
    except (ValueError, RecursionError) as exc:  # our hooks, or an integer too long to convert
        reason = str(exc) if isinstance(exc, ValueError) else "nested too deeply"
        raise ImportRefused(Problem(file, where, f"not acceptable JSON ({reason[:120]})")) from None


def read_bytes(path: Path) -> bytes:
    name = str(path)
    try:
        size = os.stat(path).st_size
    except OSError as exc:
        raise ImportRefused(Problem(name, "", f"cannot read ({exc.strerror or exc})")) from None
    if not path.is_file():
        raise ImportRefused(Problem(name, "", "not a regular file"))
    if size > MAX_FILE_BYTES:
        raise ImportRefused(Problem(name, "", f"larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB"))
    if size == 0:
        raise ImportRefused(Problem(name, "", "empty file"))
    try:
        return path.read_bytes()
    except OSError as exc:
        raise ImportRefused(Problem(name, "", f"cannot read ({exc.strerror or exc})")) from None


def read_json_lines(file: str, data: bytes) -> Iterator[tuple[int, Any]]:
    """(line number, value) for each non-blank line of a JSON Lines file."""
    for number, line in enumerate(data.split(b"\n"), start=1):
        if line.strip():
            yield number, parse_json_text(file, line, f"line {number}")


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# --- typed access that names the field --------------------------------------------------


class Node:
    """A value read from a tool's file, with the path that names it in an error."""

    __slots__ = ("file", "path", "value")

    def __init__(self, file: str, value: Any, path: str = ""):
        self.file, self.value, self.path = file, value, path

    def refuse(self, reason: str, key: str | None = None) -> ImportRefused:
        return ImportRefused(Problem(self.file, self._join(key) if key is not None else (self.path or "(top level)"), reason))

    def _join(self, key: str | int) -> str:
        if isinstance(key, int):
            return f"{self.path}[{key}]"
        return f"{self.path}.{key}" if self.path else key

    def obj(self) -> "Node":
        if not isinstance(self.value, dict):
            raise self.refuse(f"must be an object, not {_kind(self.value)}")
        return self

    def has(self, key: str) -> bool:
        return isinstance(self.value, dict) and key in self.value and self.value[key] is not None

    def get(self, key: str, *, required: bool = True) -> "Node | None":
        self.obj()
        if key not in self.value or (self.value[key] is None and not required):
            if required:
                raise self.refuse("missing", key)
            return None
        return Node(self.file, self.value[key], self._join(key))

    def items(self, *, most: int = MAX_ROWS) -> list["Node"]:
        if not isinstance(self.value, list):
            raise self.refuse(f"must be an array, not {_kind(self.value)}")
        if len(self.value) > most:
            raise self.refuse(f"has {len(self.value)} entries; at most {most} are accepted")
        return [Node(self.file, item, self._join(index)) for index, item in enumerate(self.value)]

    def entries(self) -> list[tuple[str, "Node"]]:
        self.obj()
        return [(key, Node(self.file, value, self._join(key))) for key, value in self.value.items()]

    # Scalars: `key` reads a member; without it the node itself.
    def number(self, key: str | None = None, *, required: bool = True, minimum: float | None = 0.0,
               most: float | None = None, nullable: bool = False) -> float | None:
        node = self._member(key, required)
        if node is None:
            return None
        value = node.value
        if value is None and nullable:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise node.refuse(f"must be a number, not {_kind(value)}")
        if not math.isfinite(value):
            raise node.refuse("must be a finite number")
        if minimum is not None and value < minimum:
            raise node.refuse(f"must be at least {minimum:g}, not {value:g}")
        if most is not None and value > most:
            raise node.refuse(f"must be at most {most:g}, not {value:g}")
        return float(value)

    def integer(self, key: str | None = None, *, required: bool = True, minimum: int | None = 0,
                most: int | None = 2**53, nullable: bool = False) -> int | None:
        node = self._member(key, required)
        if node is None:
            return None
        value = node.value
        if value is None and nullable:
            return None
        if isinstance(value, float) and value.is_integer() and abs(value) <= 2**53:
            value = int(value)  # some tools write counts as 12.0
        if isinstance(value, bool) or not isinstance(value, int):
            raise node.refuse(f"must be an integer, not {_kind(value)}")
        if minimum is not None and value < minimum:
            raise node.refuse(f"must be at least {minimum}, not {value}")
        if most is not None and value > most:
            raise node.refuse(f"must be at most {most}, not {value}")
        return value

    def text(self, key: str | None = None, *, required: bool = True, most: int = MAX_TEXT,
             nullable: bool = False) -> str | None:
        node = self._member(key, required)
        if node is None:
            return None
        value = node.value
        if value is None and nullable:
            return None
        if not isinstance(value, str):
            raise node.refuse(f"must be a string, not {_kind(value)}")
        if len(value) > most:
            raise node.refuse(f"longer than {most} characters")
        if "\x00" in value:
            raise node.refuse("contains a NUL character")
        return value

    def boolean(self, key: str | None = None, *, required: bool = True) -> bool | None:
        node = self._member(key, required)
        if node is None:
            return None
        if not isinstance(node.value, bool):
            raise node.refuse(f"must be true or false, not {_kind(node.value)}")
        return node.value

    def _member(self, key: str | None, required: bool) -> "Node | None":
        if key is None:
            return self
        return self.get(key, required=required)


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def summary(values: list[float]) -> dict[str, float | int]:
    """count / mean of values Benchpack recomputed itself (the tests compare these with the tool's)."""
    return {"count": len(values), "mean": (math.fsum(values) / len(values)) if values else None}


def row(imported_tool: str, tool_version: str | None, case: str, model: str | None, *, ok: bool,
        error: str | None = None, timing: dict | None = None, tokens: dict | None = None,
        own: dict | None = None, concurrency: int | None = None) -> dict:
    """One run.jsonl row for one request (or one llama-bench sample) another tool measured.

    `timing` holds only Benchpack's own figure names whose definitions agree with the
    tool's; `own` keeps the tool's other per-request figures under the tool's names."""
    result: dict[str, Any] = {
        "pack": {"id": f"imported-{imported_tool}", "version": tool_version or "unknown"},
        "case": case,
        "adapter": f"imported-{imported_tool}",
        # A row's model is an id ('/'-separated parts of letters, digits and '._:@+=-'): other characters
        # a tool allows (spaces) become '-'; the tool's own spelling stays in its settings.
        "model": re.sub(r"[^A-Za-z0-9._:@+=/-]", "-", model or "unknown").strip("/")[:255] or "unknown",
        "ok": ok,
    }
    if error:
        result["error"] = error[:500]
    if timing:
        result["timing"] = {key: value for key, value in timing.items() if value is not None}
    if tokens:
        result["tokens"] = {**{key: value for key, value in tokens.items() if value is not None},
                            "source": imported_tool}
    result["backend"] = {"imported": {"tool": imported_tool, "version": tool_version,
                                      **({"figures": own} if own else {})}}
    if concurrency is not None and concurrency >= 1:
        result["concurrency"] = concurrency
    return result
