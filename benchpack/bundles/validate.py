"""Run the registered bundle checks and give one verdict.

The verdict is `ok` only when no check produced an error finding; a check
whose dependency failed is not run and says so, so a report never reads as
"looks fine" past the first broken foundation. This is the function the
registry service calls on uploads: it never raises for bad content.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from benchpack.bundles import secrets_scan
from benchpack.bundles.archives import is_machine_error
from benchpack.bundles.checks import CHECKS, MANIFEST_NAME, BundleContext, BundleLimits, Finding
from benchpack.results import plausibility


@dataclass
class ValidationReport:
    ok: bool
    findings: list[Finding] = field(default_factory=list)
    checks: dict[str, str] = field(default_factory=dict)  # check name -> passed | failed | skipped
    # Per run label: plausibility.summary() of its rows ({"verdict": {...}, "rows": {status: count}}),
    # and each row's verdict in row order. Computed only for a bundle whose checks passed.
    plausibility: dict[str, dict] = field(default_factory=dict)

    @property
    def errors(self) -> list[Finding]:
        return [finding for finding in self.findings if finding.severity == "error"]

    @property
    def publishable(self) -> bool:
        """Valid, and no run implausible: what may be published without an operator's written override."""
        return self.ok and not implausible_runs(self.to_dict())

    def to_dict(self) -> dict:
        return {
            "ok": self.ok,
            "error_count": len(self.errors),
            "checks": dict(self.checks),
            "findings": [finding.to_dict() for finding in self.findings],
            "plausibility": dict(self.plausibility),
        }


def implausible_runs(report: dict | None) -> dict[str, str]:
    """{run label: why} for every run a validation report (`to_dict()`) judged implausible."""
    runs = (report or {}).get("plausibility") or {}
    return {label: run["verdict"]["reason"] for label, run in runs.items()
            if isinstance(run, dict) and (run.get("verdict") or {}).get("status") == plausibility.IMPLAUSIBLE}


def bundle_plausibility(bundle_dir: Path) -> dict[str, dict]:
    """Each run's plausibility in a bundle whose checks passed (files present, JSON valid)."""
    root = Path(bundle_dir)
    manifest = json.loads((root / MANIFEST_NAME).read_text(encoding="utf-8"))
    found = {}
    for run in manifest.get("runs", []):
        files = {entry["role"]: root / run["path"] / entry["path"] for entry in run.get("files", [])
                 if entry.get("role") in ("run", "hardware", "run-metadata")}
        rows = [json.loads(line) for line in files["run"].read_text(encoding="utf-8").splitlines()
                if line.strip()] if "run" in files else []
        hardware = json.loads(files["hardware"].read_text(encoding="utf-8")) if "hardware" in files else None
        metadata = json.loads(files["run-metadata"].read_text(encoding="utf-8")) if "run-metadata" in files else None
        verdicts = plausibility.run_row_verdicts(rows, hardware, metadata)
        found[run["label"]] = {**plausibility.summary(verdicts), "row_verdicts": [v.to_dict() for v in verdicts]}
    return found


def validate_bundle(bundle_dir: Path, limits: BundleLimits | None = None) -> ValidationReport:
    ctx = BundleContext(root=Path(bundle_dir), limits=limits or BundleLimits())
    try:
        findings, status = _run_checks(ctx)
    finally:
        ctx.close()
    ok = not any(f.severity == "error" for f in findings)
    judged = bundle_plausibility(ctx.root) if ok else {}
    for label, run in judged.items():
        verdict = run["verdict"]
        if verdict["status"] == plausibility.IMPLAUSIBLE:
            # A warning, not an error: the bundle is well-formed; publishing it needs an operator's override.
            findings.append(Finding("plausibility.implausible", f"run {label!r}: {verdict['reason']}",
                                    path=f"runs/{label}/run.jsonl", severity="warning"))
    findings = [_redacted(finding) for finding in findings]
    return ValidationReport(ok=ok, findings=findings, checks=status, plausibility=judged)


def _run_checks(ctx: BundleContext) -> tuple[list[Finding], dict[str, str]]:
    findings: list[Finding] = []
    status: dict[str, str] = {}
    for registered in CHECKS:
        blocked = [name for name in registered.needs if status.get(name) != "passed"]
        if blocked:
            status[registered.name] = "skipped"
            findings.append(
                Finding(
                    "check.skipped",
                    f"'{registered.name}' check not run because '{blocked[0]}' did not pass",
                    severity="warning",
                )
            )
            continue
        try:
            produced = list(registered.run(ctx))
        except Exception as exc:  # a bug must fail closed, never pass a bundle
            if is_machine_error(exc):
                raise  # out of memory or a failing disk is no verdict on the bundle: the caller retries
            produced = [Finding("check.internal-error", f"'{registered.name}' check failed unexpectedly ({type(exc).__name__})")]
        findings.extend(produced)
        status[registered.name] = "failed" if any(f.severity == "error" for f in produced) else "passed"
    return findings, status


def _redacted(finding: Finding) -> Finding:
    """Belt and braces: a path or message that itself looks like a secret is not repeated."""
    path, message = finding.path, finding.message
    if path is not None and secrets_scan.scan_text(path):
        path = "<path withheld: looks like a credential>"
    if secrets_scan.scan_text(message):
        message = "<message withheld: looks like a credential>"
    if (path, message) == (finding.path, finding.message):
        return finding
    return Finding(finding.code, message, path, finding.line, finding.severity)
