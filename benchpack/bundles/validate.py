"""Run the registered bundle checks and give one verdict.

The verdict is `ok` only when no check produced an error finding; a check
whose dependency failed is not run and says so, so a report never reads as
"looks fine" past the first broken foundation. This is the function the
registry service calls on uploads: it never raises for bad content.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from benchpack.bundles import secrets_scan
from benchpack.bundles.archives import is_machine_error
from benchpack.bundles.checks import CHECKS, BundleContext, BundleLimits, Finding


@dataclass
class ValidationReport:
    ok: bool
    findings: list[Finding] = field(default_factory=list)
    checks: dict[str, str] = field(default_factory=dict)  # check name -> passed | failed | skipped

    @property
    def errors(self) -> list[Finding]:
        return [finding for finding in self.findings if finding.severity == "error"]

    def to_dict(self) -> dict:
        return {
            "ok": self.ok,
            "error_count": len(self.errors),
            "checks": dict(self.checks),
            "findings": [finding.to_dict() for finding in self.findings],
        }


def validate_bundle(bundle_dir: Path, limits: BundleLimits | None = None) -> ValidationReport:
    ctx = BundleContext(root=Path(bundle_dir), limits=limits or BundleLimits())
    try:
        findings, status = _run_checks(ctx)
    finally:
        ctx.close()
    findings = [_redacted(finding) for finding in findings]
    return ValidationReport(ok=not any(f.severity == "error" for f in findings), findings=findings, checks=status)


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
