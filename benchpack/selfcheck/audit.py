"""Verifier audits: replay known answers through the real repo-task pipeline.

Each repo-task case may ship `audit/<case>/audit.toml` listing fixtures — a
known-good answer, a different valid one, realistic wrong ones, shortcuts,
collateral edits, corrupt or missing evidence — each with the verdict the
verifier must reach (docs/audits.md). `audit_pack` runs every fixture as a
one-case `run_pack` against a scripted RefServer that answers with the
fixture's model output (or, for external-agent cases, with the fixture's agent
script as the external agent argv), so the executor, patch capture, verifier
and row building are the ones a real run uses. A verdict that differs from the
expected one means the verifier (or the task) is broken, not the model.
"""

from __future__ import annotations

import json
import sys
import tempfile
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import msgspec

from benchpack.errors import PackError, Problem
from benchpack.repo_task.cheats import (
    ALL_CLASSES,
    DESCRIPTIONS,
    EXTERNAL_AGENT_CLASSES,
    FENCED_PATCH_CLASSES,
    CheatSpec,
)

AUDIT_KINDS = (
    "known-good",
    "alternative-valid",
    "wrong",
    "shortcut",
    "collateral",
    "corrupt-evidence",
    "missing-evidence",
    "cheat",
)
# What every audited case should cover (eval-engineering "Test the decision boundary").
REQUIRED_COVERAGE = (
    ("known-good",),
    ("alternative-valid",),
    ("wrong",),
    ("shortcut",),
    ("collateral",),
    ("corrupt-evidence", "missing-evidence"),
)
VERDICTS = ("pass", "fail")
FIXTURE_KEYS = {"id", "kind", "model_output", "agent", "expected", "description", "failed_check", "cheat"}
CHEATS_KEYS = {"module", "base"}
# Pseudo-check ids the audit derives from the row (not from the verifier JSON).
GUARDED_WRITE = "guarded-write"
# The failed check a synthesized cheat must fail with: a cheat that flips a
# wrong answer to "pass" is caught when the hidden checks still fail; planted
# bytecode is caught by the scope check.
CHEAT_FAILED_CHECK = {"bytecode-sitecustomize": "scope", "bytecode-shadow": "scope"}
MANIFEST = "audit.toml"
AUDIT_MODEL = "benchpack-audit"


@dataclass(frozen=True)
class AuditFixture:
    case_id: str
    id: str
    kind: str
    expected: str
    description: str
    model_output: Path | None  # text the model "answers" (fenced-patch cases)
    agent: Path | None  # Python script run as the external agent (external-agent cases)
    failed_check: str | None  # for expected fails: a verifier check that must be among the failed ones
    cheat: str | None = None  # cheat class (kind "cheat")
    harness: str = "fenced-patch"
    cheat_spec: CheatSpec | None = None  # synthesized from [cheats]: the answer is built at run time


@dataclass(frozen=True)
class AuditResult:
    fixture: AuditFixture
    actual: str  # "pass" | "fail"
    failed_checks: tuple[str, ...]
    note: str  # why, in one line (task stderr, verifier checks, runner abort)

    @property
    def ok(self) -> bool:
        if self.actual != self.fixture.expected:
            return False
        return self.fixture.failed_check is None or self.fixture.failed_check in self.failed_checks


# -- loading ------------------------------------------------------------------


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _fixture_file(raw, where: str, key: str, audit_dir: Path, pack_root: Path, problems: list[Problem]) -> Path | None:
    if raw is None:
        return None
    if not isinstance(raw, str) or not raw or Path(raw).is_absolute():
        problems.append(Problem(where, key, "must be a relative path string"))
        return None
    path = (audit_dir / raw).resolve()
    if not _inside(path, pack_root.resolve()):
        problems.append(Problem(where, key, "escapes the pack directory"))
    elif not path.is_file():
        problems.append(Problem(where, key, f"{raw} does not exist"))
    else:
        return path
    return None


def _parse_fixture(entry, index: int, case, audit_dir: Path, pack_root: Path, problems: list[Problem]) -> AuditFixture | None:
    where = f"{(audit_dir / MANIFEST).relative_to(pack_root).as_posix()}"
    field = f"fixtures[{index}]"
    if not isinstance(entry, dict):
        problems.append(Problem(where, field, "must be a table"))
        return None
    before = len(problems)
    for key in sorted(set(entry) - FIXTURE_KEYS):
        problems.append(Problem(where, f"{field}.{key}", "unknown key"))
    for key in ("id", "kind", "expected", "description"):
        if not isinstance(entry.get(key), str) or not entry.get(key):
            problems.append(Problem(where, f"{field}.{key}", "is required and must be a non-empty string"))
    if isinstance(entry.get("kind"), str) and entry["kind"] and entry["kind"] not in AUDIT_KINDS:
        problems.append(Problem(where, f"{field}.kind", f"must be one of {', '.join(AUDIT_KINDS)}"))
    if isinstance(entry.get("expected"), str) and entry["expected"] and entry["expected"] not in VERDICTS:
        problems.append(Problem(where, f"{field}.expected", 'must be "pass" or "fail"'))
    failed_check = entry.get("failed_check")
    if failed_check is not None and (not isinstance(failed_check, str) or entry.get("expected") != "fail"):
        problems.append(Problem(where, f"{field}.failed_check", 'must be a string, and only with expected = "fail"'))
    external = case.harness is not None and case.harness.id == "external-agent"
    wanted, unwanted = ("agent", "model_output") if external else ("model_output", "agent")
    if entry.get(unwanted) is not None:
        problems.append(Problem(where, f"{field}.{unwanted}", f"not used by a {'external-agent' if external else 'fenced-patch'} case (use {wanted})"))
    if entry.get(wanted) is None:
        problems.append(Problem(where, f"{field}.{wanted}", "is required"))
    cheat = entry.get("cheat")
    if entry.get("kind") == "cheat" and cheat not in ALL_CLASSES:
        problems.append(Problem(where, f"{field}.cheat", f"kind = \"cheat\" needs cheat = one of {', '.join(ALL_CLASSES)}"))
    elif entry.get("kind") != "cheat" and cheat is not None:
        problems.append(Problem(where, f"{field}.cheat", 'only with kind = "cheat"'))
    model_output = _fixture_file(entry.get("model_output"), where, f"{field}.model_output", audit_dir, pack_root, problems)
    agent = _fixture_file(entry.get("agent"), where, f"{field}.agent", audit_dir, pack_root, problems)
    if len(problems) > before:
        return None
    return AuditFixture(case.id, entry["id"], entry["kind"], entry["expected"], entry["description"],
                        model_output, agent, failed_check, cheat, "external-agent" if external else "fenced-patch")  # fmt: skip


def _cheat_fixtures(table, case, audit_dir: Path, pack_root: Path, problems: list[Problem]) -> list[AuditFixture]:
    """One synthesized fixture per fenced-patch cheat class from the case's `[cheats]` table."""
    where = f"{(audit_dir / MANIFEST).relative_to(pack_root).as_posix()}"
    if not isinstance(table, dict):
        problems.append(Problem(where, "cheats", "must be a table"))
        return []
    before = len(problems)
    for key in sorted(set(table) - CHEATS_KEYS):
        problems.append(Problem(where, f"cheats.{key}", "unknown key"))
    if case.harness is not None and case.harness.id == "external-agent":
        problems.append(Problem(where, "cheats", "is for fenced-patch cases; external-agent cases list cheat fixtures with agent scripts"))
    module = table.get("module")
    if not isinstance(module, str) or not module or Path(module).is_absolute() or ".." in Path(module).parts:
        problems.append(Problem(where, "cheats.module", "must be a relative path inside the repo fixture"))
    base = _fixture_file(table.get("base"), where, "cheats.base", audit_dir, pack_root, problems)
    if len(problems) > before:
        return []
    spec = CheatSpec(module, base)
    return [
        AuditFixture(case.id, f"cheat-{cheat}", "cheat", "fail", DESCRIPTIONS[cheat], None, None,
                     CHEAT_FAILED_CHECK.get(cheat, "hidden-tests"), cheat, "fenced-patch", spec)  # fmt: skip
        for cheat in FENCED_PATCH_CLASSES
    ]


def load_audit(pack, case_ids: list[str] | None = None) -> list[AuditFixture]:
    """Every audit fixture of the pack's repo-task cases; PackError lists every problem found."""
    problems: list[Problem] = []
    repo_cases = [c for c in pack.cases if c.kind == "repo-task"]
    known = {c.id for c in repo_cases}
    for case_id in case_ids or []:
        if case_id not in known:
            problems.append(Problem("benchpack audit", "--case", f"{case_id!r} is not a repo-task case of {pack.id}"))
    if not repo_cases:
        problems.append(Problem(pack.manifest_path.name, "cases", "has no repo-task cases to audit"))
    fixtures: list[AuditFixture] = []
    for case in repo_cases:
        if case_ids and case.id not in case_ids:
            continue
        audit_dir = pack.root / "audit" / case.id
        manifest = audit_dir / MANIFEST
        if not manifest.is_file():
            problems.append(Problem(f"audit/{case.id}/{MANIFEST}", "", "missing: every repo-task case needs audit fixtures"))
            continue
        try:
            data = tomllib.loads(manifest.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            problems.append(Problem(f"audit/{case.id}/{MANIFEST}", "", f"not valid TOML: {exc}"))
            continue
        entries = data.get("fixtures")
        if not isinstance(entries, list) or not entries:
            problems.append(Problem(f"audit/{case.id}/{MANIFEST}", "fixtures", "must be a non-empty array of tables"))
            continue
        for key in sorted(set(data) - {"fixtures", "cheats"}):
            problems.append(Problem(f"audit/{case.id}/{MANIFEST}", key, "unknown key"))
        seen: set[str] = set()
        parsed = [_parse_fixture(entry, index, case, audit_dir, pack.root, problems) for index, entry in enumerate(entries)]
        if "cheats" in data:
            parsed += _cheat_fixtures(data["cheats"], case, audit_dir, pack.root, problems)
        for index, fixture in enumerate(parsed):
            if fixture is None:
                continue
            if fixture.id in seen:
                problems.append(Problem(f"audit/{case.id}/{MANIFEST}", f"fixtures[{index}].id", f"duplicate id {fixture.id!r}"))
            seen.add(fixture.id)
            fixtures.append(fixture)
    if problems:
        raise PackError(problems)
    return fixtures


def missing_coverage(fixtures: list[AuditFixture]) -> dict[str, list[str]]:
    """case id → the required fixture kinds and cheat classes it lacks (REQUIRED_COVERAGE, cheats.py)."""
    kinds: dict[str, set[str]] = {}
    cheats: dict[str, set[str]] = {}
    harness: dict[str, str] = {}
    for fixture in fixtures:
        kinds.setdefault(fixture.case_id, set()).add(fixture.kind)
        harness[fixture.case_id] = fixture.harness
        if fixture.cheat:
            cheats.setdefault(fixture.case_id, set()).add(fixture.cheat)
    missing: dict[str, list[str]] = {}
    for case, kinds_of in kinds.items():
        lacking = ["/".join(group) for group in REQUIRED_COVERAGE if not kinds_of.intersection(group)]
        required = EXTERNAL_AGENT_CLASSES if harness[case] == "external-agent" else FENCED_PATCH_CLASSES
        lacking += [f"cheat {c}" for c in required if c not in cheats.get(case, set())]
        if lacking:
            missing[case] = lacking
    return missing


# -- running ------------------------------------------------------------------


def _one_case_pack(pack, case_id: str):
    case = next(c for c in pack.cases if c.id == case_id)
    defaults = msgspec.structs.replace(pack.defaults, warmup=0, repetitions=1)
    return msgspec.structs.replace(pack, cases=(case,), defaults=defaults)


def _read_json(path: Path) -> dict:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def _first_line(path: Path) -> str:
    try:
        text = path.read_text(encoding="utf-8").strip()
    except OSError:
        return ""
    return text.splitlines()[0] if text else ""


def verdict_from_row(row: dict | None, out: Path, aborted: str | None) -> tuple[str, tuple[str, ...], str]:
    """(actual verdict, failed verifier checks, one-line note) for one audited execution."""
    if row is None:
        return "fail", (), aborted or "no row was written"
    scoring = row.get("scoring") or {}
    passed = bool(row.get("ok")) and scoring.get("passed") is True
    verify = _read_json(out / row["verify"]["path"]) if isinstance(row.get("verify"), dict) else {}
    failed = verify.get("failed_checks")
    failed_checks = tuple(c for c in failed if isinstance(c, str)) if isinstance(failed, list) else ()
    repo = row.get("repo_task") if isinstance(row.get("repo_task"), dict) else {}
    if repo.get("guarded_writes"):
        failed_checks += (GUARDED_WRITE,)
    task_stderr = _first_line(out / row["task"]["stderr_path"]) if isinstance(row.get("task"), dict) else ""
    parts = []
    if aborted or row.get("error"):
        parts.append(aborted or row["error"])
    if task_stderr:
        parts.append(f"task: {task_stderr}")
    if failed_checks:
        parts.append("failed: " + ", ".join(failed_checks))
    if repo.get("guarded_writes") or repo.get("status") == "error":
        parts.append(repo.get("failure_reason", ""))
    return ("pass" if passed else "fail"), failed_checks, "; ".join(parts)


def fixture_answer(pack, fixture: AuditFixture) -> str:
    """The model output a fixture plays: its file, a synthesized cheat, or a placeholder for agents."""
    if fixture.cheat_spec is not None:
        from benchpack.repo_task.cheats import synthesize_answer
        from benchpack.repo_task.executors import fenced_patch_text

        case = next(c for c in pack.cases if c.id == fixture.case_id)
        pristine = Path(pack.root / pack.repo_fixture(case).path).resolve()

        def apply(workspace: Path, text: str) -> str | None:
            result = fenced_patch_text(workspace, text)
            return result.stderr.strip() or None

        try:
            return synthesize_answer(pristine, fixture.cheat_spec, fixture.cheat, apply)
        except (OSError, RuntimeError) as exc:
            raise PackError(Problem(f"audit/{fixture.case_id}/{MANIFEST}", "cheats", str(exc))) from exc
    if fixture.model_output:
        return fixture.model_output.read_text(encoding="utf-8")
    return "(external agent)"


def run_fixture(pack, fixture: AuditFixture, server, workdir: Path, *, unsandboxed: bool = False) -> AuditResult:
    """One fixture through `run_pack`: fresh workspace, real executor, real verifier."""
    from benchpack.run.runner import RunOptions, run_pack

    out = workdir / fixture.case_id / fixture.id
    server.configure(responses=[fixture_answer(pack, fixture)])
    options = RunOptions(
        adapter="openai-chat",
        model=AUDIT_MODEL,
        endpoint=server.openai_url,
        out=out,
        host_label="benchpack-audit",
        external_agent_argv=[sys.executable, str(fixture.agent)] if fixture.agent else None,
        unsandboxed=unsandboxed,
    )
    one_case = _one_case_pack(pack, fixture.case_id)
    executor = None
    if fixture.agent:
        from benchpack.repo_task.integration import RepoTaskExecutor

        # Fixture agents are the pack author's code: besides their own directory they
        # may read the pack's scripts/ (never verify/, which stays unmounted).
        scripts = tuple(p for p in (pack.root / "scripts",) if p.is_dir())
        executor = RepoTaskExecutor(one_case, options, external_agent_argv=options.external_agent_argv,
                                    agent_read_only=scripts)  # fmt: skip
    outcome = run_pack(one_case, options, repo_task_executor=executor)
    row = outcome.rows[0] if outcome.rows else None
    actual, failed_checks, note = verdict_from_row(row, out, outcome.aborted)
    return AuditResult(fixture, actual, failed_checks, note)


def audit_pack(pack, fixtures: list[AuditFixture], *, workdir: Path | None = None,
               on_result: Callable[[AuditResult], None] | None = None, unsandboxed: bool = False) -> list[AuditResult]:  # fmt: skip
    """Run every fixture; `workdir` keeps the result dirs (default: a temporary directory)."""
    from benchpack.refserver.server import RefServer

    results: list[AuditResult] = []
    with tempfile.TemporaryDirectory(prefix="benchpack-audit-") as tmp:
        base = Path(workdir) if workdir is not None else Path(tmp)
        with RefServer(ttft_s=0.0, itl_s=0.0) as server:
            for fixture in fixtures:
                result = run_fixture(pack, fixture, server, base, unsandboxed=unsandboxed)
                results.append(result)
                if on_result is not None:
                    on_result(result)
    return results


def results_to_dict(pack, results: list[AuditResult]) -> dict:
    return {
        "pack": {"id": pack.id, "version": pack.version},
        "ok": all(r.ok for r in results),
        "fixtures": [
            {
                "case": r.fixture.case_id,
                "fixture": r.fixture.id,
                "kind": r.fixture.kind,
                "cheat": r.fixture.cheat,
                "expected": r.fixture.expected,
                "actual": r.actual,
                "failed_check": r.fixture.failed_check,
                "failed_checks": list(r.failed_checks),
                "ok": r.ok,
                "note": r.note,
            }
            for r in results
        ],
    }
