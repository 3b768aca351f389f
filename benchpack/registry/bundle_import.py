"""`registry bundle import`: index received bundles, validated first (D-030).

A bundle is validated with the same checks its creator ran; any error
finding refuses the whole import, listed by finding code, and nothing is
written. Valid bundles' run directories are then indexed through the normal
import path, one transaction for all bundles, keeping each run's label from
the bundle manifest (not the on-disk directory name).
"""

from __future__ import annotations

import json
from pathlib import Path

from benchpack.errors import BenchpackError, Problem
from benchpack.registry.importer import ImportSummary, RunSource, import_result_dirs


def bundle_sources(bundle_dir: Path) -> list[RunSource]:
    """Validate one bundle and list its runs; BenchpackError names every error finding."""
    from benchpack.bundles.create import validate_bundle  # owned by the bundle module; imported where used
    from benchpack.bundles.checks import MANIFEST_NAME

    if not bundle_dir.is_dir():
        raise BenchpackError(Problem(str(bundle_dir), "", "not a bundle directory"))
    report = validate_bundle(bundle_dir)
    if not report.ok:
        raise BenchpackError([
            Problem(finding.path or str(bundle_dir), f"line {finding.line}" if finding.line else "",
                    f"{finding.code}: {finding.message}")
            for finding in report.errors
        ] or [Problem(str(bundle_dir), "", "bundle is not valid")])
    manifest = json.loads((bundle_dir / MANIFEST_NAME).read_text(encoding="utf-8"))
    provenance = manifest.get("provenance") or "unknown"
    return [
        RunSource(path=bundle_dir / run["path"], label=run["label"], source=f"bundle ({provenance})")
        for run in manifest.get("runs", [])
    ]


def import_bundles(db: str | Path, bundle_dirs: list[Path]) -> list[ImportSummary]:
    problems: list[Problem] = []
    sources: list[RunSource] = []
    for bundle_dir in bundle_dirs:
        try:
            sources += bundle_sources(Path(bundle_dir))
        except BenchpackError as exc:
            problems += exc.problems
    if problems:
        raise BenchpackError(problems)  # validate every bundle before writing anything
    return import_result_dirs(db, sources)
