"""What a valid result bundle is: its format, and the small checks that prove it.

Each check has a name, the checks it depends on, and yields `Finding`s with
stable codes. `bundle_validate.validate_bundle` runs them in `CHECKS` order and
skips a check whose dependency failed. Checks never echo file content or
manifest values in messages (they may be secrets); they name paths, line
numbers, JSON pointers and the rule that failed.

Bundle layout (docs/bundles.md):

    bundle.json                      manifest
    runs/<label>/run.jsonl           role "run"
    runs/<label>/hardware.json       role "hardware"      (optional)
    runs/<label>/run-metadata.json   role "run-metadata"  (optional)
    runs/<label>/patch/<case>/rep-NNN.diff              role "patch"
    runs/<label>/task/<case>/rep-NNN.model-calls.jsonl  role "model-calls"
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import sys
import unicodedata
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Callable, Iterable, Iterator, Literal, Optional

import fastjsonschema
import jsonschema
import msgspec

from benchpack.bundles import secret_layers, secrets_scan
from benchpack.results import contract
from benchpack.repo_task import model_calls
from benchpack.repo_task.model_calls import is_safe_line
from benchpack.results.provenance import CLAIMS

MANIFEST_NAME = "bundle.json"
FORMAT_NAME = "benchpack-bundle"
FORMAT_VERSION = 1
# What a bundle may claim (benchpack.results.provenance); the registry earns the published value.
PROVENANCES = CLAIMS
OMIT_REASONS = ("not-compact", "unreferenced-patch", "unsafe-model-call-log")
LABEL_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"
# Tools `benchpack import` reads; their rows say `adapter: imported-<tool>` (benchpack.interop).
IMPORT_TOOLS = ("vllm", "guidellm", "aiperf", "llama-bench", "harbor")
IMPORTED_PREFIX = "imported-"
_ID = r"[A-Za-z0-9][A-Za-z0-9_-]*"
_ROLE_PATTERNS = (
    ("run", re.compile(r"run\.jsonl")),
    ("hardware", re.compile(r"hardware\.json")),
    ("run-metadata", re.compile(r"run-metadata\.json")),
    ("patch", re.compile(rf"patch/{_ID}/rep-[0-9]{{3,}}\.diff")),
    ("model-calls", re.compile(rf"task/{_ID}/rep-[0-9]{{3,}}\.model-calls\.jsonl")),
)
ROLES = tuple(role for role, _ in _ROLE_PATTERNS)
TEXT_ROLES = ROLES  # every bundled artifact is UTF-8 text


def role_for_path(run_relative: str) -> str | None:
    """The only role a run-relative path may have, or None if it may not be bundled."""
    for role, pattern in _ROLE_PATTERNS:
        if pattern.fullmatch(run_relative):
            return role
    return None


@dataclass(frozen=True)
class BundleLimits:
    max_file_bytes: int = 64 * 1024 * 1024
    max_total_bytes: int = 512 * 1024 * 1024
    max_files: int = 20_000
    max_runs: int = 1_000
    max_rows: int = 2_000_000
    # What one run may store and render; None = no limit (the local CLI). The
    # registry service sets all three (docs/service.md, limits).
    max_rows_per_run: int | None = None
    max_cases_per_run: int | None = None
    max_row_bytes: int | None = None


# The row's limits live with the row contract (benchpack.results.contract); re-exported here.
from benchpack.results.contract import (  # noqa: E402,F401
    MAX_ADAPTER_CHARS, MAX_CASE_CHARS, MAX_MODEL_CHARS, MAX_PACK_ID_CHARS, MAX_PACK_VERSION_CHARS, MAX_REPETITION,
    MAX_SAFE_INTEGER,
)


@dataclass(frozen=True)
class Finding:
    code: str
    message: str
    path: str | None = None
    line: int | None = None
    severity: str = "error"  # "error" | "warning"

    def to_dict(self) -> dict:
        return {"code": self.code, "message": self.message, "path": self.path, "line": self.line, "severity": self.severity}


# --- schemas -------------------------------------------------------------------

_SHA256 = {"type": "string", "pattern": "^[0-9a-f]{64}$"}
_BYTES = {"type": "integer", "minimum": 0}
_REL_PATH = {"type": "string", "minLength": 1, "maxLength": 512}
MANIFEST_SCHEMA: dict = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "additionalProperties": False,
    "required": ["format", "format_version", "provenance", "created_at", "tool", "runs"],
    "properties": {
        "format": {"const": FORMAT_NAME},
        "format_version": {"const": FORMAT_VERSION},
        "provenance": {"enum": list(PROVENANCES)},
        "created_at": {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$"},
        "tool": {
            "type": "object",
            "additionalProperties": False,
            "required": ["name", "version"],
            "properties": {"name": {"const": "benchpack"}, "version": {"type": "string", "pattern": r"^[0-9A-Za-z.+-]{1,64}$"}},
        },
        # Present only on a bundle made by `benchpack import`: the figures were measured by another
        # tool, and every run, row and run-metadata.json in it must say the same (check "imported").
        "source": {
            "type": "object",
            "additionalProperties": False,
            "required": ["kind", "tool", "tool_version", "label", "file", "sha256"],
            "properties": {
                "kind": {"const": "imported"},
                "tool": {"enum": list(IMPORT_TOOLS)},
                "tool_version": {"type": ["string", "null"], "pattern": r"^[0-9A-Za-z.+_-]{1,64}$"},
                "label": {"type": "string", "pattern": r"^imported from [a-z-]+ [^\n]{1,80}$"},
                "file": {"type": "string", "minLength": 1, "maxLength": 255},
                "sha256": _SHA256,
            },
        },
        "runs": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["label", "path", "files", "omitted"],
                "properties": {
                    "label": {"type": "string", "pattern": LABEL_PATTERN},
                    "path": _REL_PATH,
                    "files": {
                        "type": "array",
                        "minItems": 1,
                        "items": {
                            "type": "object",
                            "additionalProperties": False,
                            "required": ["path", "role", "sha256", "bytes"],
                            "properties": {"path": _REL_PATH, "role": {"enum": list(ROLES)}, "sha256": _SHA256, "bytes": _BYTES},
                        },
                    },
                    "omitted": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "additionalProperties": False,
                            "required": ["path", "reason", "sha256", "bytes"],
                            "properties": {"path": _REL_PATH, "reason": {"enum": list(OMIT_REASONS)}, "sha256": _SHA256, "bytes": _BYTES},
                        },
                    },
                },
            },
        },
    },
}

# The row schema is generated from the row contract (benchpack.results.contract.Row): the
# compiled decoder checks a row in C in one pass, and a row it refuses gets its messages
# from the JSON Schema generated from the same Struct, so the two cannot disagree.
ROW_SCHEMA: dict = contract.ROW_SCHEMA
_VALID_ROW = contract.ROW_DECODER


class _CaseOnly(msgspec.Struct, gc=False):
    case: str


_CASE_ONLY = msgspec.json.Decoder(_CaseOnly)

HARDWARE_SCHEMA: dict = {"type": "object", "properties": {"gpus": {"type": ["array", "null"]}}}
# D-025: a permissive object; known sections are objects, notes is a string.
RUN_METADATA_SCHEMA: dict = {
    "type": "object",
    "properties": {
        "runtime": {"type": "object"},
        "model": {"type": "object"},
        "operating_conditions": {"type": "object"},
        "notes": {"type": "string"},
    },
}


class SchemaChecker:
    """A compiled fast path (fastjsonschema) with jsonschema for complete, value-free messages."""

    def __init__(self, schema: dict):
        self._fast = fastjsonschema.compile(schema)
        self._full = jsonschema.Draft202012Validator(schema)


    def problems(self, instance: Any) -> list[str]:
        try:
            self._fast(instance)
            return []
        except fastjsonschema.JsonSchemaValueException:
            pass
        return [describe_schema_error(error) for error in sorted(self._full.iter_errors(instance), key=lambda e: list(e.path))]


def _most_specific(error: jsonschema.ValidationError) -> jsonschema.ValidationError:
    """The generated schema spells "X or null" as anyOf: report the rule of X that failed, not the anyOf."""
    while error.validator in ("anyOf", "oneOf") and error.context:
        candidates = [e for e in error.context if not (e.validator == "type" and e.validator_value == "null")]
        error = jsonschema.exceptions.best_match(candidates or error.context)
    return error


def describe_schema_error(error: jsonschema.ValidationError) -> str:
    """Say which rule failed where, built from the schema, never from the (possibly secret) value."""
    error = _most_specific(error)
    where = "/" + "/".join(str(part) for part in error.absolute_path) if error.absolute_path else "top level"
    rule, expected = error.validator, error.validator_value
    if rule == "required":
        instance = error.instance if isinstance(error.instance, dict) else {}
        missing = [name for name in expected if name not in instance]
        return f"{where}: missing required field(s) {', '.join(missing)}"
    if rule == "additionalProperties":
        return f"{where}: has fields the format does not define"
    if rule == "type":
        kinds = expected if isinstance(expected, list) else [expected]
        return f"{where}: must be {' or '.join(kinds)}"
    if rule in ("enum", "const"):
        options = expected if rule == "enum" else [expected]
        return f"{where}: must be one of {', '.join(json.dumps(option) for option in options)}"
    if rule == "pattern":
        return f"{where}: does not match the pattern {expected}"
    if rule in ("minimum", "maximum", "minLength", "maxLength", "minItems", "maxItems"):
        return f"{where}: violates {rule} {expected}"
    return f"{where}: fails the '{rule}' rule"


# --- model-call telemetry -------------------------------------------------------


# `is_safe_line` as msgspec types, for plain telemetry text (`_is_plain_text`):
# printable ASCII without backslashes, so every string in it is spelled out
# raw and has no control or separator characters; the per-character test
# reduces to the length limit. And no '?', '@' or '://' anywhere, so no
# endpoint looks like a URL. Stricter than `is_safe_line`, never looser:
# tests/bundles/test_bundles_model_calls.py keeps "accepted here => safe there".
_SafeText = Optional[Annotated[str, msgspec.Meta(max_length=model_calls.MAX_SAFE_STRING)]]
_SafeCount = Optional[Annotated[int, msgspec.Meta(ge=0)]]


class _SafeModelCall(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    schema_version: Literal[1]
    sequence: Annotated[int, msgspec.Meta(ge=1)]
    model: Annotated[str, msgspec.Meta(min_length=1, max_length=model_calls.MAX_SAFE_STRING)]
    ok: bool
    started_at: _SafeText = None
    ended_at: _SafeText = None
    duration_s: Optional[Annotated[float, msgspec.Meta(ge=0, le=sys.float_info.max)]] = None  # le: 1e999 decodes to inf
    adapter: _SafeText = None
    endpoint: _SafeText = None
    response_format: _SafeText = None
    token_budget_field: _SafeText = None
    finish_reason: _SafeText = None
    prompt_tokens: _SafeCount = None
    output_tokens: _SafeCount = None
    cached_prompt_tokens: _SafeCount = None
    error: _SafeText = None


assert set(_SafeModelCall.__struct_fields__) == model_calls.ALLOWED_FIELDS
_SAFE_MODEL_CALL = msgspec.json.Decoder(_SafeModelCall)
_PLAIN_BYTES = bytes(c for c in range(0x20, 0x7F) if chr(c) not in "\\?@") + b"\n"
assert all(marker in "?@://" for marker in model_calls.URL_MARKERS)


def _is_plain_text(data: bytes) -> bool:
    """Printable ASCII and newlines only, without backslash, '?', '@' or '://'."""
    return not data.translate(None, _PLAIN_BYTES) and b"://" not in data


def is_safe_model_call_line(line: str) -> bool:
    """One allowlisted telemetry object: the format spec's list, as repo_task.model_calls checks it.

    The secret scan is not repeated here; callers scan whole files once.
    """
    if line.isascii() and _is_plain_text(line.encode()):
        try:
            _SAFE_MODEL_CALL.decode(line)
            return True
        except msgspec.DecodeError:
            pass
    try:
        record = msgspec.json.decode(line)
    except msgspec.DecodeError:
        return False
    return is_safe_line(record)


# --- JSONL decoding straight from the file's bytes ----------------------------

# Besides "\n", str.splitlines() (the exact path's reading) also breaks lines
# at \r, \x0b, \x0c, \x1c-\x1e, U+0085, U+2028 and U+2029. JSON refuses the
# raw control characters anywhere, so a line holding one fails to decode here
# too; \r (JSON whitespace) and the three Unicode breaks (allowed raw inside
# strings) must be ruled out first.
_UNICODE_LINE_BREAKS = tuple(mark.encode() for mark in ("\x85", "\u2028", "\u2029"))


def decodes_every_line(decoder: msgspec.json.Decoder, data: bytes, limit: int) -> int | None:
    """How many lines `data` has, when every one decodes with `decoder`; else None.

    None also for blank lines, CRLF, other line breaks and more than `limit`
    lines: the caller's line-by-line path then says which line is the problem.
    Each line is decoded from a view of the bytes and dropped at once, which
    keeps the work in cache (about twice as fast as one whole-file decode).
    """
    if b"\r" in data or (not data.isascii() and any(mark in data for mark in _UNICODE_LINE_BREAKS)):
        return None
    view, find, decode = memoryview(data), data.find, decoder.decode
    lines = start = 0
    size = len(data)
    try:
        while start < size:
            end = find(b"\n", start)
            if end < 0:
                end = size
            decode(view[start:end])
            lines += 1
            start = end + 1
    except msgspec.DecodeError:  # also a blank line: msgspec refuses empty input
        return None
    return lines if 0 < lines <= limit else None


# --- the bundle being checked ---------------------------------------------------


@dataclass(frozen=True)
class ListedFile:
    path: str  # bundle-relative POSIX path
    role: str
    sha256: str
    size: int
    run_index: int


@dataclass
class BundleContext:
    """The bundle being checked: each file is read once, and every check works from those bytes.

    Reading a file also starts its secret prefilter (one RE2 pass, which
    runs without the GIL) on a background thread, so it overlaps the row
    decoding that follows; `close()` stops that thread.
    """

    root: Path
    limits: BundleLimits
    manifest: dict | None = None
    files: dict[str, ListedFile] = field(default_factory=dict)  # only safe, existing, regular files
    _bytes: dict[str, bytes] = field(default_factory=dict)
    _text: dict[str, str | None] = field(default_factory=dict)
    _prefilter: dict[str, Future[tuple[bool, bool, set[str]]]] = field(default_factory=dict)
    _worker: ThreadPoolExecutor | None = None

    def read(self, path: str) -> bytes:
        if path not in self._bytes:
            data = self._bytes[path] = _read_no_follow(self.root / path)
            if self._worker is None:
                self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="bundle-secret-prefilter")
            self._prefilter[path] = self._worker.submit(_prefilter, data)
        return self._bytes[path]

    def might_hold_bad_number(self, path: str) -> bool:
        """The number prefilter's verdict (RE2, on the background thread): False means every number is fine."""
        self.read(path)
        return self._prefilter[path].result()[1]

    def might_hold_secret(self, path: str) -> bool:
        """The secret prefilter's verdict on the file: False means the exact scan would find nothing."""
        self.read(path)
        return self._prefilter[path].result()[0]  # re-raises a failure, so the check fails closed

    def secret_layers(self, path: str) -> set[str]:
        """The decoded layers (secret_layers) whose gate matches the file, from the same background thread."""
        self.read(path)
        return self._prefilter[path].result()[2]

    def close(self) -> None:
        if self._worker is not None:
            self._worker.shutdown(wait=True, cancel_futures=True)

    def text(self, path: str) -> str | None:
        """The file as text, or None when it is not UTF-8."""
        if path not in self._text:
            try:
                self._text[path] = self.read(path).decode("utf-8")
            except UnicodeDecodeError:
                self._text[path] = None
        return self._text[path]

    def is_utf8(self, path: str) -> bool:
        """Whether the file is UTF-8, without building its text when it is plain ASCII (most are)."""
        if path in self._text:
            return self._text[path] is not None
        return self.read(path).isascii() or self.text(path) is not None

    def files_with_role(self, *roles: str) -> list[ListedFile]:
        return [listed for listed in self.files.values() if listed.role in roles]


def _read_no_follow(path: Path) -> bytes:
    descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(descriptor, "rb") as handle:
        return handle.read()


@dataclass(frozen=True)
class Check:
    name: str
    run: Callable[[BundleContext], Iterable[Finding]]
    needs: tuple[str, ...] = ()
    description: str = ""


CHECKS: list[Check] = []


def check(name: str, *, needs: tuple[str, ...] = (), description: str = ""):
    def register(function: Callable[[BundleContext], Iterable[Finding]]):
        CHECKS.append(Check(name, function, needs, description))
        return function

    return register


# --- the checks, in run order ---------------------------------------------------


@check("layout", description="the bundle is a real directory")
def check_layout(ctx: BundleContext) -> Iterator[Finding]:
    try:
        mode = os.lstat(ctx.root).st_mode
    except FileNotFoundError:
        yield Finding("bundle.missing", "bundle directory does not exist")
        return
    if stat.S_ISLNK(mode):
        yield Finding("bundle.symlink", "bundle directory is a symlink")
    elif not stat.S_ISDIR(mode):
        yield Finding("bundle.not-directory", "bundle path is not a directory")


@check("manifest", needs=("layout",), description=f"{MANIFEST_NAME} exists and matches the manifest schema")
def check_manifest(ctx: BundleContext) -> Iterator[Finding]:
    path = ctx.root / MANIFEST_NAME
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        yield Finding("manifest.missing", f"no {MANIFEST_NAME} in the bundle", MANIFEST_NAME)
        return
    if not stat.S_ISREG(mode):
        yield Finding("manifest.not-regular", f"{MANIFEST_NAME} is not a regular file", MANIFEST_NAME)
        return
    if os.lstat(path).st_size > ctx.limits.max_file_bytes:
        yield Finding("limit.file-size", f"{MANIFEST_NAME} exceeds {ctx.limits.max_file_bytes} bytes", MANIFEST_NAME)
        return
    text = ctx.text(MANIFEST_NAME)
    if text is None:
        yield Finding("manifest.not-utf8", f"{MANIFEST_NAME} is not UTF-8", MANIFEST_NAME)
        return
    try:
        manifest = json.loads(text)
    except ValueError as exc:
        yield Finding("manifest.not-json", f"{MANIFEST_NAME} is not valid JSON", MANIFEST_NAME, getattr(exc, "lineno", None))
        return
    if isinstance(manifest, dict) and "format_version" in manifest and manifest["format_version"] != FORMAT_VERSION:
        yield Finding(
            "manifest.unsupported-version",
            f"format_version is not {FORMAT_VERSION}; this benchpack reads bundle format {FORMAT_VERSION} only",
            MANIFEST_NAME,
        )
        return
    problems = _MANIFEST_CHECKER.problems(manifest)
    for problem in problems:
        yield Finding("manifest.schema", problem, MANIFEST_NAME)
    if problems:
        return
    if len(manifest["runs"]) > ctx.limits.max_runs:
        yield Finding("limit.run-count", f"more than {ctx.limits.max_runs} runs", MANIFEST_NAME)
        return
    ctx.manifest = manifest


_MANIFEST_CHECKER = SchemaChecker(MANIFEST_SCHEMA)


def _path_problem(path: str) -> tuple[str, str] | None:
    """(code, reason) when a manifest path is not a plain relative POSIX path."""
    if "\x00" in path or "\\" in path or any(unicodedata.category(c)[0] == "C" for c in path):
        return "path.invalid", "contains NUL, backslash or control characters"
    if path.startswith("/") or re.match(r"^[A-Za-z]:", path):
        return "path.absolute", "is absolute"
    parts = path.split("/")
    if ".." in parts:
        return "path.traversal", "contains '..'"
    if any(part in ("", ".") for part in parts):
        return "path.invalid", "has empty or '.' segments"
    return None


@check("paths", needs=("manifest",), description="every listed path is relative, inside the bundle, a regular file, and has the role its location implies")
def check_paths(ctx: BundleContext) -> Iterator[Finding]:
    assert ctx.manifest is not None
    seen: dict[str, str] = {}
    labels: dict[str, int] = {}
    real_directories: set[str] = set()  # parents already seen to be directories, not symlinks
    for run_index, run in enumerate(ctx.manifest["runs"]):
        where = f"runs[{run_index}]"
        if run["label"] in labels:
            yield Finding("manifest.duplicate-label", f"{where}.label repeats runs[{labels[run['label']]}].label", MANIFEST_NAME)
        labels.setdefault(run["label"], run_index)
        if run["path"] != f"runs/{run['label']}":
            yield Finding("path.run-mismatch", f"{where}.path must be runs/<label>", MANIFEST_NAME)
            continue
        roles = [entry["role"] for entry in run["files"]]
        if roles.count("run") != 1:
            yield Finding("path.run-file", f"{where} must list exactly one run.jsonl", MANIFEST_NAME)
        for kind in ("files", "omitted"):
            for entry_index, entry in enumerate(run[kind]):
                problem = _path_problem(entry["path"])
                if problem:
                    yield Finding(problem[0], f"{where}.{kind}[{entry_index}].path {problem[1]}", MANIFEST_NAME)
        for entry_index, entry in enumerate(run["files"]):
            entry_where = f"{where}.files[{entry_index}]"
            if _path_problem(entry["path"]):
                continue
            if role_for_path(entry["path"]) != entry["role"]:
                yield Finding("path.role-mismatch", f"{entry_where}: role does not match the path's location", MANIFEST_NAME)
                continue
            full = f"{run['path']}/{entry['path']}"
            folded = unicodedata.normalize("NFC", full).casefold()
            if folded in seen:
                yield Finding("path.duplicate", f"{entry_where}.path is listed more than once (ignoring case)", MANIFEST_NAME)
                continue
            seen[folded] = full
            finding = _file_state(ctx.root, full, real_directories)
            if finding:
                yield finding
                continue
            ctx.files[full] = ListedFile(full, entry["role"], entry["sha256"], entry["bytes"], run_index)


def _file_state(root: Path, relative: str, real_directories: set[str]) -> Finding | None:
    parts = relative.split("/")
    for depth in range(len(parts)):
        prefix = "/".join(parts[: depth + 1])
        if prefix in real_directories:
            continue
        try:
            mode = os.lstat(os.path.join(root, prefix)).st_mode
        except FileNotFoundError:
            return Finding("path.missing", "listed file is missing from the bundle", relative)
        except OSError:
            return Finding("path.invalid", "listed path cannot be inspected", relative)
        if stat.S_ISLNK(mode):
            return Finding("path.symlink", "listed path is or passes through a symlink", relative)
        last = depth == len(parts) - 1
        if last and not stat.S_ISREG(mode):
            return Finding("path.not-regular", "listed path is not a regular file", relative)
        if not last and not stat.S_ISDIR(mode):
            return Finding("path.missing", "a parent of the listed path is not a directory", relative)
        if not last:
            real_directories.add(prefix)
    return None


@check("limits", needs=("paths",), description="file sizes, total size and file count are within limits")
def check_limits(ctx: BundleContext) -> Iterator[Finding]:
    total = 0
    if len(ctx.files) > ctx.limits.max_files:
        yield Finding("limit.file-count", f"more than {ctx.limits.max_files} files")
    for listed in ctx.files.values():
        size = os.lstat(ctx.root / listed.path).st_size
        total += size
        if size > ctx.limits.max_file_bytes:
            yield Finding("limit.file-size", f"file exceeds {ctx.limits.max_file_bytes} bytes", listed.path)
    if total > ctx.limits.max_total_bytes:
        yield Finding("limit.total-size", f"bundle exceeds {ctx.limits.max_total_bytes} bytes in total")


@check("unlisted", needs=("paths",), description="the bundle holds nothing the manifest does not list")
def check_unlisted(ctx: BundleContext) -> Iterator[Finding]:
    budget = ctx.limits.max_files + 100  # stop walking a directory tree built to exhaust us
    pending = [""]  # bundle-relative directories still to list, depth first in name order
    while pending:
        directory = pending.pop()
        try:
            with os.scandir(os.path.join(ctx.root, directory)) as listing:
                entries = sorted(listing, key=lambda entry: entry.name)
        except OSError:
            continue  # as os.walk: a directory that cannot be listed holds nothing we could read
        subdirectories = []
        for entry in entries:
            budget -= 1
            if budget < 0:
                yield Finding("limit.file-count", f"more than {ctx.limits.max_files} entries in the bundle")
                return
            relative = f"{directory}/{entry.name}" if directory else entry.name
            if entry.is_symlink():
                yield Finding("path.symlink", "the bundle contains a symlink", relative)
            elif entry.is_dir(follow_symlinks=False):
                subdirectories.append(relative)
            elif not entry.is_file(follow_symlinks=False):
                yield Finding("path.not-regular", "the bundle contains a device, socket or FIFO", relative)
            elif relative != MANIFEST_NAME and relative not in ctx.files:
                yield Finding("file.unlisted", "file is not listed in the manifest", relative)
        pending.extend(reversed(subdirectories))


@check("hashes", needs=("limits",), description="every listed file has the listed byte count and sha256")
def check_hashes(ctx: BundleContext) -> Iterator[Finding]:
    for listed in ctx.files.values():
        data = ctx.read(listed.path)
        if len(data) != listed.size:
            yield Finding("size.mismatch", f"file has {len(data)} bytes, the manifest says {listed.size}", listed.path)
        elif hashlib.sha256(data).hexdigest() != listed.sha256:
            yield Finding("hash.mismatch", "file content does not match its sha256 in the manifest", listed.path)


@check("utf8", needs=("limits",), description="every bundled artifact is UTF-8 text")
def check_utf8(ctx: BundleContext) -> Iterator[Finding]:
    for listed in ctx.files.values():
        if not ctx.is_utf8(listed.path):
            data = ctx.read(listed.path)
            try:
                data.decode("utf-8")
            except UnicodeDecodeError as exc:
                line = data.count(b"\n", 0, exc.start) + 1
                yield Finding("text.not-utf8", "file is not valid UTF-8", listed.path, line)


_ROW_CHECKER = SchemaChecker(ROW_SCHEMA)


@check("rows", needs=("utf8",), description="every run.jsonl line is a JSON object matching the row schema")
def check_rows(ctx: BundleContext) -> Iterator[Finding]:
    total = 0
    decode = msgspec.json.decode  # strict RFC 8259 (no NaN), ~3x faster than json.loads
    for listed in ctx.files_with_role("run"):
        whole_file = decodes_every_line(_VALID_ROW, ctx.read(listed.path), ctx.limits.max_rows - total)
        if whole_file is not None:  # the common case: every line a valid row, checked in C
            total += whole_file
            continue
        text = ctx.text(listed.path) or ""
        rows_here = 0
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            rows_here += 1
            total += 1
            if total > ctx.limits.max_rows:
                yield Finding("limit.rows", f"more than {ctx.limits.max_rows} rows in the bundle", listed.path, number)
                return
            try:
                _VALID_ROW.decode(line)
                continue  # the common case: valid, checked in C
            except msgspec.DecodeError:
                pass
            try:
                row = decode(line)
            except msgspec.DecodeError:
                yield Finding("row.not-json", "line is not valid JSON", listed.path, number)
                continue
            if not isinstance(row, dict):
                yield Finding("row.not-object", "line is not a JSON object", listed.path, number)
                continue
            for problem in _ROW_CHECKER.problems(row):
                yield Finding("row.schema", problem, listed.path, number)
        if rows_here == 0:
            yield Finding("rows.empty", "run.jsonl has no rows", listed.path)


@check("run-limits", needs=("rows",), description="each run is within the rows, cases and bytes-per-row limits (when set)")
def check_run_limits(ctx: BundleContext) -> Iterator[Finding]:
    limits = ctx.limits
    if limits.max_rows_per_run is None and limits.max_cases_per_run is None and limits.max_row_bytes is None:
        return
    for listed in ctx.files_with_role("run"):
        lines = [line for line in ctx.read(listed.path).split(b"\n") if line.strip()]
        if limits.max_rows_per_run is not None and len(lines) > limits.max_rows_per_run:
            yield Finding("limit.rows-per-run", f"{len(lines)} rows; a run may have at most {limits.max_rows_per_run}", listed.path)
        if limits.max_row_bytes is not None:
            longest = max((len(line) for line in lines), default=0)
            if longest > limits.max_row_bytes:
                number = 1 + next(i for i, line in enumerate(ctx.read(listed.path).split(b"\n")) if len(line) == longest)
                yield Finding("limit.row-bytes", f"a row of {longest} bytes; rows may have at most {limits.max_row_bytes}", listed.path, number)
        if limits.max_cases_per_run is not None:
            cases = {_CASE_ONLY.decode(line).case for line in lines}
            if len(cases) > limits.max_cases_per_run:
                yield Finding("limit.cases-per-run", f"{len(cases)} distinct cases; a run may have at most {limits.max_cases_per_run}", listed.path)


# A token that might be a number out of range: an integer of 16+ digits (after
# ':', '[', ',', whitespace or '-': never the fraction digits every float repr
# has), an exponent of 3+ digits, or the literals Python's json module accepts.
# Only files and lines that match are decoded again with checking hooks (strings
# can match too; the hooks are exact). RE2 runs this at ~600 MB/s; Python's re
# at ~20 MB/s, which would dominate validation.
_SUSPICIOUS_NUMBER_PATTERN = r"[:\[,\s-][0-9]{16}|[eE]\+?[0-9]{3}|NaN|Infinity"
_SUSPICIOUS_NUMBER = re.compile(_SUSPICIOUS_NUMBER_PATTERN.encode())  # exact per-line use, and without RE2
# The secret prefilter and this one in a single RE2 pass over each file.
_PREFILTERS = secrets_scan.combined_prefilter((_SUSPICIOUS_NUMBER_PATTERN,))


def _prefilter(data: bytes) -> tuple[bool, bool, set[str]]:
    """(might hold a secret, might hold a bad number, the secret layers whose gate matches): one RE2 pass
    for the first two when RE2 is there, and the layers' own gate pass (a separate set: its windows would
    slow the first), both on the background thread."""
    layers = secret_layers.layers_that_apply(data)
    if _PREFILTERS is None:
        return secrets_scan.might_contain_secret(data), _SUSPICIOUS_NUMBER.search(data) is not None, layers
    found = _PREFILTERS.Match(data) or ()
    return (any(i < secrets_scan.SECRET_PATTERN_COUNT for i in found), secrets_scan.SECRET_PATTERN_COUNT in found,
            layers)


class _BadNumber(ValueError):
    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code, self.message = code, message


def _refuse_constant(name: str):
    raise _BadNumber("json.non-finite", f"holds {name}, which is not a JSON number")


def _checked_float(text: str) -> float:
    value = float(text)
    if value != value or value in (float("inf"), float("-inf")):
        raise _BadNumber("json.non-finite", "holds a number outside the range of a double (it reads as infinity)")
    return value


def _checked_int(text: str) -> int:
    if len(text.lstrip("-")) > 16 or abs(int(text)) > MAX_SAFE_INTEGER:
        raise _BadNumber("json.integer-range", f"holds an integer outside +/-{MAX_SAFE_INTEGER} (2^53 - 1)")
    return int(text)


def number_problem(text: str) -> tuple[str, str] | None:
    """(code, message) when a JSON text holds a non-finite number or an out-of-range integer."""
    try:
        json.loads(text, parse_constant=_refuse_constant, parse_float=_checked_float, parse_int=_checked_int)
    except _BadNumber as bad:
        return bad.code, bad.message
    except ValueError:
        return None  # not JSON at all: the format checks say so
    return None


_JSON_LINE_ROLES = ("run", "model-calls")
_JSON_FILE_ROLES = ("hardware", "run-metadata")


def _holds_nul(value) -> bool:
    """Whether a decoded JSON document has U+0000 in a key or string value."""
    return any("\x00" in text for text in secrets_scan.json_strings(value))


def nul_problem(text: str) -> tuple[str, str] | None:
    """(code, message) when a JSON text holds U+0000 (written `\\u0000`): PostgreSQL cannot store it."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if _holds_nul(value):
        return "json.nul-character", "holds U+0000 in a string, which databases cannot store"
    return None


@check("json-values", needs=("utf8",), description="every JSON file holds only finite numbers, integers within +/-(2^53 - 1), and no U+0000")
def check_json_values(ctx: BundleContext) -> Iterator[Finding]:
    whole = [MANIFEST_NAME, *(listed.path for listed in ctx.files_with_role(*_JSON_FILE_ROLES))]
    for path in whole:
        numbers = ctx.might_hold_bad_number(path)
        nul = b"\\u0000" in ctx.read(path)
        if numbers or nul:
            text = ctx.text(path) or ""
            problem = (number_problem(text) if numbers else None) or (nul_problem(text) if nul else None)
            if problem:
                yield Finding(problem[0], f"file {problem[1]}", path)
    for listed in ctx.files_with_role(*_JSON_LINE_ROLES):
        numbers = ctx.might_hold_bad_number(listed.path)
        nul = b"\\u0000" in ctx.read(listed.path)
        if not (numbers or nul):
            continue
        reported = 0
        for number, line in enumerate((ctx.text(listed.path) or "").split("\n"), start=1):
            problem = None
            if numbers and _SUSPICIOUS_NUMBER.search(line.encode()):
                problem = number_problem(line)
            if problem is None and nul and "\\u0000" in line:
                problem = nul_problem(line)
            if problem:
                yield Finding(problem[0], f"line {problem[1]}", listed.path, number)
                reported += 1
                if reported >= 10:
                    break


_METADATA_CHECKERS = {"hardware": SchemaChecker(HARDWARE_SCHEMA), "run-metadata": SchemaChecker(RUN_METADATA_SCHEMA)}


@check("metadata", needs=("utf8",), description="hardware.json and run-metadata.json are JSON objects with the documented section types")
def check_metadata(ctx: BundleContext) -> Iterator[Finding]:
    for listed in ctx.files_with_role("hardware", "run-metadata"):
        try:
            value = json.loads(ctx.text(listed.path) or "")
        except ValueError as exc:
            yield Finding("metadata.not-json", "file is not valid JSON", listed.path, getattr(exc, "lineno", None))
            continue
        if not isinstance(value, dict):
            yield Finding("metadata.not-object", "file must hold a JSON object", listed.path)
            continue
        for problem in _METADATA_CHECKERS[listed.role].problems(value):
            yield Finding("metadata.schema", problem, listed.path)


def _run_files(ctx: BundleContext, run: dict, role: str) -> list[str]:
    return [f"{run['path']}/{entry['path']}" for entry in run.get("files", []) if entry.get("role") == role
            and f"{run['path']}/{entry['path']}" in ctx.files]


@check("imported", needs=("rows", "metadata"),
       description="an imported bundle is labelled throughout (manifest source, every row, run-metadata); "
                   "a Benchpack-measured bundle has no imported rows")
def check_imported(ctx: BundleContext) -> Iterator[Finding]:
    source = ctx.manifest.get("source")
    tool = source["tool"] if source else None
    for run in ctx.manifest["runs"]:
        rows_imported = rows_measured = 0
        for path in _run_files(ctx, run, "run"):
            for number, line in enumerate((ctx.text(path) or "").splitlines(), start=1):
                if not line.strip():
                    continue
                row = json.loads(line)
                adapter, pack = row.get("adapter"), (row.get("pack") or {}).get("id")
                if isinstance(adapter, str) and adapter.startswith(IMPORTED_PREFIX) \
                        or isinstance(pack, str) and pack.startswith(IMPORTED_PREFIX):
                    rows_imported += 1
                    if tool is None:
                        yield Finding("imported.unlabelled", "an imported row in a bundle whose manifest has no "
                                      "'source' (imported rows are never shown as measured by Benchpack)", path, number)
                        break
                    if adapter != f"{IMPORTED_PREFIX}{tool}" or pack != f"{IMPORTED_PREFIX}{tool}":
                        yield Finding("imported.mismatch", f"row's adapter/pack.id is not '{IMPORTED_PREFIX}{tool}' "
                                      "(the manifest's source tool)", path, number)
                        break
                else:
                    rows_measured += 1
        if tool is None:
            for path in _run_files(ctx, run, "run-metadata"):
                if isinstance(json.loads(ctx.text(path) or "{}").get("imported"), dict):
                    yield Finding("imported.unlabelled", "run-metadata.json has an 'imported' section but the "
                                  "manifest has no 'source'", path)
            continue
        if rows_measured:
            yield Finding("imported.mixed", f"{rows_measured} row(s) not labelled '{IMPORTED_PREFIX}{tool}' in an "
                          "imported bundle", f"{run['path']}/run.jsonl")
        metadata_files = _run_files(ctx, run, "run-metadata")
        if not metadata_files:
            yield Finding("imported.metadata-missing", "an imported run must carry run-metadata.json with its "
                          "'imported' section", run["path"])
            continue
        imported = json.loads(ctx.text(metadata_files[0]) or "{}").get("imported")
        if not isinstance(imported, dict) or imported.get("tool") != tool \
                or imported.get("tool_version") != source["tool_version"] or imported.get("label") != source["label"]:
            yield Finding("imported.metadata-mismatch", "run-metadata.json 'imported' must name the manifest's "
                          "source tool, tool_version and label", metadata_files[0])


@check("model-calls", needs=("utf8",), description="model-call logs hold only allowlisted safe telemetry lines")
def check_model_calls(ctx: BundleContext) -> Iterator[Finding]:
    for listed in ctx.files_with_role("model-calls"):
        data = ctx.read(listed.path)
        if _is_plain_text(data) and decodes_every_line(_SAFE_MODEL_CALL, data, sys.maxsize) is not None:
            continue
        for number, line in enumerate((ctx.text(listed.path) or "").splitlines(), start=1):
            if line.strip() and not is_safe_model_call_line(line):
                yield Finding("model-calls.unsafe", "line is not an allowlisted safe telemetry object", listed.path, number)


@check("secrets", needs=("limits",), description="no bundled file looks like it carries a credential, also behind JSON escapes and decoded layers")
def check_secrets(ctx: BundleContext) -> Iterator[Finding]:
    for path in [MANIFEST_NAME, *ctx.files]:
        data = ctx.read(path)
        listed = ctx.files.get(path)
        role = listed.role if listed else "manifest"
        documents = "lines" if role in _JSON_LINE_ROLES else "document" if role in (*_JSON_FILE_ROLES, "manifest") else None

        named = []  # each lookup scans the line again: only the first MAX_NAMED_FIELDS findings get a field

        def where(kind: str, line: int) -> str:
            named.append(line)
            field = secret_layers.field_of(data, line, kind, documents) if documents and len(named) <= secret_layers.MAX_NAMED_FIELDS else None
            return f" in field {field}" if field else ""

        raw_hits = secrets_scan.scan_bytes(data) if ctx.might_hold_secret(path) else []
        for hit in raw_hits:
            yield Finding(f"secret.{hit.kind}", f"possible {hit.description}{where(hit.kind, hit.line)} (value not shown)", path, hit.line)
        seen = {(hit.kind, hit.line) for hit in raw_hits}
        if role not in ("patch",):  # a diff is not JSON: an escape in it is the text itself
            for hit in secrets_scan.scan_decoded_json(data, lines=role in _JSON_LINE_ROLES):
                if (hit.kind, hit.line) not in seen:
                    seen.add((hit.kind, hit.line))
                    yield Finding(f"secret.{hit.kind}", f"possible {hit.description} written with JSON escapes{where(hit.kind, hit.line)} (value not shown)", path, hit.line)
        # base64 / base32 / hex / %-encoded, HTML entities, backslash escapes, spaced out, rot13, look-alikes,
        # zero-width-split, reversed, and split across strings or rows (secret_layers)
        for layered in secret_layers.scan_layers(data, json_documents=documents, applying=ctx.secret_layers(path)):
            if layered.hit.kind == "decode-budget":
                yield Finding("secret.decode-budget", f"refused: {layered.description}", path, layered.hit.line)
            elif (layered.hit.kind, layered.hit.line) not in seen:
                seen.add((layered.hit.kind, layered.hit.line))
                yield Finding(f"secret.{layered.hit.kind}", f"possible {layered.description} (value not shown)", path, layered.hit.line)


# Registered last, from its own module: the identifier grammar check (benchpack.ids, docs/format.md).
from benchpack.bundles import id_checks as _id_checks  # noqa: E402,F401
