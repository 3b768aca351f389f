"""Create compact, shareable result bundles (D-030); validation lives in bundle_validate.

A bundle copies only report-facing artifacts of each result directory
(run.jsonl, hardware.json, run-metadata.json, patch diffs referenced by rows,
safe model-call logs) and records every other regular file by hash and size.
It is built in a temporary directory beside `out`, validated with the same
checks a receiver runs, and only then renamed into place, so a refused or
interrupted creation leaves nothing half-written.

Privacy: a bundle never carries a machine's real hostname. hardware.json's
`hostname` becomes an opaque label (`host-` + 10 hex digits of an HMAC with
a key made for this bundle and then thrown away: runs from one machine share
a label inside the bundle, and labels cannot be linked across bundles or
turned back into the name), unless the run recorded a label the user chose
(`benchpack run --host-label`) or the bundle is made with `--host-label`.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import re
import shutil
import stat
import tempfile
from datetime import datetime, timezone
from pathlib import Path

from benchpack import __version__

from benchpack.bundles import secrets_scan
from benchpack.bundles.checks import (
    FORMAT_NAME,
    FORMAT_VERSION,
    LABEL_PATTERN,
    MANIFEST_NAME,
    PROVENANCES,
    BundleLimits,
    Finding,
    is_safe_model_call_line,
    role_for_path,
)
from benchpack.bundles.validate import ValidationReport, validate_bundle
from benchpack.errors import BenchpackError, ConfigError, Problem
from benchpack.results.resultdir import RUN_FILE, RUN_METADATA_FILE, read_rows

__all__ = ["create_bundle", "validate_bundle", "ValidationReport", "Finding", "BundleLimits", "PROVENANCES"]


HOST_LABEL_PATTERN = r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}"


def create_bundle(result_dirs: list[Path], out: Path, provenance: str, force: bool = False,
                  host_label: str | None = None, allow_incomplete: bool = False,
                  source: dict | None = None) -> Path:
    """Bundle `result_dirs` into `out`.

    `host_label`: publish this as every run's hostname; None: an opaque label
    (see the module docstring). A run whose run-metadata.json says it did not
    finish (`complete: false`) is refused unless `allow_incomplete`; then it
    goes in as it is, and its metadata keeps saying so to every reader.
    `source`: the manifest's `source` label of an imported bundle (`benchpack import`)."""
    sources = [Path(path) for path in result_dirs]
    out = Path(out)
    _check_arguments(sources, out, provenance, force, host_label, allow_incomplete)
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".partial", dir=out.parent))
    hostnames = _HostLabels(host_label)
    try:
        runs = [_copy_run(source, staging, hostnames) for source in sources]
        manifest = {
            "format": FORMAT_NAME,
            "format_version": FORMAT_VERSION,
            "provenance": provenance,
            "created_at": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "tool": {"name": "benchpack", "version": __version__},
            **({"source": source} if source else {}),
            "runs": runs,
        }
        (staging / MANIFEST_NAME).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
        report = validate_bundle(staging)
        if not report.ok:
            raise BenchpackError(
                [Problem(f.path or str(out), f"line {f.line}" if f.line else "", f"{f.code}: {f.message}") for f in report.errors]
            )
        staging.chmod(0o777 & ~_umask())  # mkdtemp made it private; a bundle is meant to be shared
        _move_into_place(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return out


def _incomplete_reason(source: Path) -> str | None:
    """Why the run did not finish, from its run-metadata.json; None when it finished or does not say."""
    try:
        metadata = json.loads((source / RUN_METADATA_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(metadata, dict) or metadata.get("complete") is not False:
        return None
    reason = metadata.get("incomplete_reason")
    return reason if isinstance(reason, str) and reason else "no reason recorded"


def _check_arguments(sources: list[Path], out: Path, provenance: str, force: bool,
                     host_label: str | None = None, allow_incomplete: bool = False) -> None:
    problems: list[Problem] = []
    if provenance not in PROVENANCES:
        problems.append(Problem("--provenance", "", f"must be one of {', '.join(PROVENANCES)}"))
    if host_label is not None and not re.fullmatch(HOST_LABEL_PATTERN, host_label):
        problems.append(Problem("--host-label", "", "must be 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit"))
    if not sources:
        problems.append(Problem("bundle create", "", "give at least one result directory"))
    out_resolved = out.resolve()
    labels: dict[str, Path] = {}
    for source in sources:
        if not source.is_dir() or source.is_symlink():
            problems.append(Problem(str(source), "", "not a result directory"))
            continue
        run_file = source / RUN_FILE
        if not run_file.is_file() or run_file.is_symlink():
            problems.append(Problem(str(source), "", f"has no regular {RUN_FILE}"))
        incomplete = None if allow_incomplete else _incomplete_reason(source)
        if incomplete:
            problems.append(Problem(str(source / RUN_METADATA_FILE), "complete",
                                    f"the run did not finish ({incomplete}); rerun it, or pass --allow-incomplete "
                                    "to bundle it as an incomplete run"))
        resolved = source.resolve()
        if not re.fullmatch(LABEL_PATTERN, resolved.name):
            problems.append(Problem(str(source), "", "directory name must be letters, digits, '.', '_' or '-' (it becomes the run label)"))
        elif resolved.name in labels:
            problems.append(Problem(str(source), "", f"has the same directory name as {labels[resolved.name]}"))
        labels.setdefault(resolved.name, source)
        if out_resolved == resolved or out_resolved.is_relative_to(resolved) or resolved.is_relative_to(out_resolved):
            problems.append(Problem(str(out), "", f"must be disjoint from result directory {source} (not equal, inside or containing it)"))
    if os.path.lexists(out):
        if not force:
            problems.append(Problem(str(out), "", "already exists (use --force to replace an existing bundle)"))
        elif out.is_symlink() or not out.is_dir() or not (out / MANIFEST_NAME).is_file():
            problems.append(Problem(str(out), "", f"exists but is not a bundle directory (no {MANIFEST_NAME}); refusing to replace it"))
    if problems:
        raise ConfigError(problems)


class _HostLabels:
    """What a bundle says instead of each hostname (see the module docstring)."""

    def __init__(self, chosen: str | None) -> None:
        self.chosen = chosen
        self._key = secrets.token_bytes(32)  # lives only while this bundle is made

    def replace(self, hardware: dict) -> dict:
        if self.chosen is not None:
            return {**hardware, "hostname": self.chosen, "host_label": True}
        if hardware.get("host_label") is True or not isinstance(hardware.get("hostname"), str):
            return hardware  # a label the user chose at run time, or no hostname at all
        digest = hmac.new(self._key, hardware["hostname"].encode("utf-8"), hashlib.sha256).hexdigest()
        return {**hardware, "hostname": f"host-{digest[:10]}", "host_label": False}

    def rewrite(self, data: bytes) -> bytes:
        try:
            hardware = json.loads(data)
        except (ValueError, UnicodeDecodeError):
            return data  # not JSON: validation refuses the bundle and says why
        if not isinstance(hardware, dict):
            return data
        return (json.dumps(self.replace(hardware), indent=2) + "\n").encode("utf-8")


def _copy_run(source: Path, staging: Path, hostnames: _HostLabels) -> dict:
    label = source.resolve().name
    referenced_patches = _referenced_patch_paths(source)
    files: list[dict] = []
    omitted: list[dict] = []
    for relative, full in _regular_files(source):
        role = role_for_path(relative)
        reason = None
        if role is None:
            reason = "not-compact"
        elif role == "patch" and relative not in referenced_patches:
            reason = "unreferenced-patch"
        if reason:
            omitted.append({"path": relative, "reason": reason, **_hash_file(full)})
            continue
        data = full.read_bytes()  # hash what is copied, not what is on disk later
        if role == "hardware":
            data = hostnames.rewrite(data)
        if role == "model-calls" and not _is_safe_model_call_log(data):
            omitted.append({"path": relative, "reason": "unsafe-model-call-log", **_digest(data)})
            continue
        target = staging / "runs" / label / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        files.append({"path": relative, "role": role, **_digest(data)})
    return {"label": label, "path": f"runs/{label}", "files": files, "omitted": omitted}


def _referenced_patch_paths(source: Path) -> set[str]:
    """Run-relative patch paths named by rows; anything pointing outside the result dir is ignored."""
    paths = set()
    for row in read_rows(source / RUN_FILE):
        patch = row.get("patch")
        value = patch.get("path") if isinstance(patch, dict) else None
        if not isinstance(value, str) or value.startswith("/") or "\\" in value:
            continue
        parts = value.split("/")
        if ".." in parts or "" in parts:
            continue
        paths.add(value)
    return paths


def _regular_files(root: Path):
    """(run-relative POSIX path, path) for every regular file; symlinks are never followed."""
    for directory, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames.sort()
        for name in sorted(filenames):
            full = Path(directory, name)
            if stat.S_ISREG(os.lstat(full).st_mode):
                yield full.relative_to(root).as_posix(), full


def _is_safe_model_call_log(data: bytes) -> bool:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    if secrets_scan.scan_text(text):
        return False  # an allowlisted field (a short error, say) can still carry a credential
    return all(is_safe_model_call_line(line) for line in text.splitlines() if line.strip())


def _digest(data: bytes) -> dict:
    return {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}


def _hash_file(path: Path) -> dict:
    digest = hashlib.sha256()
    size = 0
    with path.open("rb") as handle:
        while chunk := handle.read(1024 * 1024):
            digest.update(chunk)
            size += len(chunk)
    return {"sha256": digest.hexdigest(), "bytes": size}


def _umask() -> int:
    current = os.umask(0o022)
    os.umask(current)
    return current


def _move_into_place(staging: Path, out: Path) -> None:
    if not os.path.lexists(out):
        staging.rename(out)
        return
    retired = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".old", dir=out.parent))
    retired.rmdir()
    out.rename(retired)
    try:
        staging.rename(out)
    except BaseException:
        retired.rename(out)
        raise
    shutil.rmtree(retired, ignore_errors=True)
