"""Validate an uploaded archive with the core library, in a temporary directory.

The archive bytes come from the database; they are extracted with
`benchpack.bundles.archives.safe_extract` (zip slip, links, bombs die there), checked
with `benchpack.bundles.create.validate_bundle`, and the compact files are read back
into memory. Nothing outside the temporary directory is written, and the
directory is gone when this returns.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings

from benchpack.bundles import archives

from benchpack.bundles import create as bundles
from benchpack.bundles.checks import MANIFEST_NAME, BundleLimits


@dataclass
class CompactFile:
    run_label: str
    path: str
    role: str
    sha256: str
    size: int
    content: str


@dataclass
class ValidationOutcome:
    ok: bool
    report: dict
    reason: str = ""
    provenance: str | None = None
    summary: dict | None = None
    files: list[CompactFile] = field(default_factory=list)

    @property
    def holds_secret(self) -> bool:
        """Refused (also) because a file looks like it carries a credential."""
        return any(f.get("code", "").startswith("secret.") for f in self.report.get("findings", []))

    def file_rows(self, submission):
        from submissions.models import SubmissionFile

        return [
            SubmissionFile(
                submission=submission,
                run_label=f.run_label,
                path=f.path,
                role=f.role,
                sha256=f.sha256,
                size=f.size,
                content=f.content,
            )
            for f in self.files
        ]


def _failure(code: str, message: str) -> ValidationOutcome:
    report = {"ok": False, "findings": [{"code": code, "message": message, "path": None, "line": None, "severity": "error"}]}
    return ValidationOutcome(ok=False, report=report, reason=f"{code}: {message}")


def validate_archive(archive_name: str, data: bytes, archive_limits: archives.ArchiveLimits | None = None,
                     bundle_limits: BundleLimits | None = None) -> ValidationOutcome:
    """The verdict on one upload. Infrastructure errors (a full disk, say) propagate: they are not verdicts."""
    try:
        kind = archives.archive_kind(Path(archive_name))
    except archives.ArchiveError as exc:
        return _failure(exc.code, exc.message)
    scratch = getattr(settings, "VALIDATION_SCRATCH_DIR", "") or None  # apart from the database's files
    with tempfile.TemporaryDirectory(prefix="benchpack-validate-", dir=scratch) as tmp:
        archive_path = Path(tmp) / f"upload.{kind}"
        archive_path.write_bytes(data)
        try:
            bundle_dir = archives.safe_extract(archive_path, Path(tmp) / "bundle", archive_limits or archives.ArchiveLimits())
        except archives.ArchiveError as exc:
            return _failure(exc.code, exc.message)
        report = bundles.validate_bundle(bundle_dir, bundle_limits)
        report_dict = report.to_dict()
        if not report.ok:
            codes = sorted({f.code for f in report.findings if f.severity == "error"})
            return ValidationOutcome(ok=False, report=report_dict, reason="failed checks: " + ", ".join(codes))
        manifest = json.loads((bundle_dir / MANIFEST_NAME).read_text(encoding="utf-8"))
        files = list(_compact_files(bundle_dir, manifest))
        return ValidationOutcome(
            ok=True,
            report=report_dict,
            provenance=manifest.get("provenance"),
            summary={"runs": [run.get("label") for run in manifest.get("runs", [])], "files": len(files),
                     # an imported bundle's label ("imported from TOOL VERSION"), which the catalogue shows
                     **({"source": manifest["source"]} if isinstance(manifest.get("source"), dict) else {})},
            files=files,
        )


def _compact_files(bundle_dir: Path, manifest: dict):
    for run in manifest.get("runs", []):
        for entry in run.get("files", []):
            path = f"{run['path']}/{entry['path']}"
            raw = (bundle_dir / path).read_bytes()
            yield CompactFile(
                run_label=run["label"],
                path=path,
                role=entry.get("role", ""),
                sha256=hashlib.sha256(raw).hexdigest(),
                size=len(raw),
                content=raw.decode("utf-8"),
            )
