"""Shared checks for repo-task verifiers (an identical copy ships in every
bundled repo-task pack so each pack stays self-contained; a test keeps the
copies in sync).

A verifier is `python verify/<case>.py --workspace W --case C --pack-id P
--pack-version V --source-fixture-id F --patch PATCH --output JSON`. It
compares the post-task workspace W with the pristine fixture F (found through
the pack manifest: the pack directory is this file's parent's parent), runs
the repository's own tests and the pack's hidden tests in subprocesses, writes
one JSON document listing every check, and exits 0 only when all checks pass.

Outcome classes in the JSON: "pass", "fail" (the work is wrong) and "error"
(the evidence itself is missing or unusable, e.g. no workspace).
"""

from __future__ import annotations

import argparse
import fnmatch
import hashlib
import json
import os
import subprocess
import sys
import tomllib
from dataclasses import asdict, dataclass, field
from pathlib import Path

# Build and interpreter by-products: never part of the answer, never collateral.
IGNORED_DIRS = {"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", "target"}
IGNORED_SUFFIXES = (".pyc", ".pyo")
OUTPUT_TAIL_CHARS = 4000


@dataclass
class Check:
    id: str
    passed: bool
    detail: str = ""
    evidence_error: bool = False  # the check could not look at real evidence


@dataclass
class Context:
    workspace: Path
    case: str
    pack_id: str
    pack_version: str
    source_fixture_id: str
    patch: Path
    output: Path
    pack_dir: Path
    pristine: Path | None
    checks: list[Check] = field(default_factory=list)

    def add(self, check: Check) -> Check:
        self.checks.append(check)
        return check


def parse_args(argv: list[str] | None = None) -> Context:
    parser = argparse.ArgumentParser()
    for name in ("workspace", "case", "pack-id", "pack-version", "source-fixture-id", "patch", "output"):
        parser.add_argument(f"--{name}", required=True)
    args = parser.parse_args(argv)
    pack_dir = Path(__file__).resolve().parent.parent
    return Context(
        workspace=Path(args.workspace).resolve(),
        case=args.case,
        pack_id=args.pack_id,
        pack_version=args.pack_version,
        source_fixture_id=args.source_fixture_id,
        patch=Path(args.patch),
        output=Path(args.output),
        pack_dir=pack_dir,
        pristine=pristine_fixture(pack_dir, args.source_fixture_id),
    )


def pristine_fixture(pack_dir: Path, fixture_id: str) -> Path | None:
    manifest = tomllib.loads((pack_dir / "benchpack.toml").read_text(encoding="utf-8"))
    for fixture in manifest.get("fixtures", []):
        if fixture.get("id") == fixture_id and fixture.get("kind") == "repo":
            path = (pack_dir / fixture["path"]).resolve()
            return path if path.is_dir() else None
    return None


def _ignored(rel: Path) -> bool:
    return any(part in IGNORED_DIRS for part in rel.parts) or rel.name.endswith(IGNORED_SUFFIXES)


def tree_hashes(root: Path) -> dict[str, str]:
    """sha256 of every regular file under root (POSIX relative path → hex), caches skipped."""
    hashes: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in IGNORED_DIRS]
        for name in filenames:
            path = Path(dirpath) / name
            rel = path.relative_to(root)
            if _ignored(rel) or not (path.is_file() or path.is_symlink()):
                continue
            data = os.readlink(path).encode() if path.is_symlink() else path.read_bytes()
            hashes[rel.as_posix()] = hashlib.sha256(data).hexdigest()
    return hashes


def changed_paths(pristine: Path, workspace: Path) -> list[str]:
    before, after = tree_hashes(pristine), tree_hashes(workspace)
    return sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))


def _matches(path: str, patterns: tuple[str, ...]) -> bool:
    return any(fnmatch.fnmatchcase(path, pattern) for pattern in patterns)


def check_evidence(ctx: Context) -> bool:
    """The workspace and the pristine fixture both exist; otherwise nothing else can be judged."""
    if ctx.pristine is None:
        ctx.add(Check("evidence", False, f"source fixture {ctx.source_fixture_id!r} not found in the pack", True))
        return False
    if not ctx.workspace.is_dir():
        ctx.add(Check("evidence", False, f"workspace {ctx.workspace} does not exist", True))
        return False
    ctx.add(Check("evidence", True, "workspace and pristine fixture present"))
    return True


def check_protected(ctx: Context, patterns: tuple[str, ...]) -> Check:
    """Files the task must not touch (the tests that define success) are byte-identical."""
    touched = [p for p in changed_paths(ctx.pristine, ctx.workspace) if _matches(p, patterns)]
    detail = "changed: " + ", ".join(touched) if touched else "protected files unchanged"
    return ctx.add(Check("protected-unchanged", not touched, detail))


def check_scope(ctx: Context, allowed: tuple[str, ...]) -> Check:
    """Every changed path is on the case's allowlist (no collateral edits)."""
    changed = changed_paths(ctx.pristine, ctx.workspace)
    outside = [p for p in changed if not _matches(p, allowed)]
    if outside:
        return ctx.add(Check("scope", False, "changed outside the allowlist: " + ", ".join(outside)))
    return ctx.add(Check("scope", True, f"{len(changed)} changed path(s), all allowed: " + ", ".join(changed)))


def check_changed(ctx: Context) -> Check:
    """Something changed at all (an empty patch is a no-op answer, not a fix)."""
    changed = changed_paths(ctx.pristine, ctx.workspace)
    return ctx.add(Check("changed", bool(changed), f"{len(changed)} changed path(s)"))


def subprocess_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "DJANGO_"))}
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # never write caches into the pack's hidden tests
    env["PYTHONHASHSEED"] = "0"
    env.update(extra or {})
    return env


def run(argv: list[str], cwd: Path, *, env: dict[str, str] | None = None, timeout: float = 60.0) -> tuple[int | None, str]:
    try:
        proc = subprocess.run(argv, cwd=cwd, env=env or subprocess_env(), capture_output=True, text=True,
                              timeout=timeout, stdin=subprocess.DEVNULL)  # fmt: skip
    except subprocess.TimeoutExpired:
        return None, f"timed out after {timeout} s"
    except OSError as exc:
        return None, f"could not start {argv[0]}: {exc}"
    return proc.returncode, (proc.stdout + proc.stderr)[-OUTPUT_TAIL_CHARS:]


def check_command(ctx: Context, check_id: str, argv: list[str], *, cwd: Path | None = None,
                  env: dict[str, str] | None = None, timeout: float = 60.0) -> Check:  # fmt: skip
    code, output = run(argv, cwd or ctx.workspace, env=env, timeout=timeout)
    return ctx.add(Check(check_id, code == 0, f"exit {code}\n{output}"))


def unittest_argv(start_dir: Path, top_level: Path | None = None) -> list[str]:
    argv = [sys.executable, "-m", "unittest", "discover", "-s", str(start_dir), "-p", "test*.py"]
    return argv + ["-t", str(top_level)] if top_level else argv


def check_hidden_tests(ctx: Context, hidden_dir: Path, *, python_path: str = ".", timeout: float = 60.0) -> Check:
    """The pack's hidden tests (never copied into the workspace) against the workspace code."""
    env = subprocess_env({"PYTHONPATH": str((ctx.workspace / python_path).resolve())})
    return check_command(ctx, "hidden-tests", unittest_argv(hidden_dir, hidden_dir), env=env, timeout=timeout)


def finish(ctx: Context, extra: dict | None = None) -> int:
    """Write the verify JSON, print one line per check, exit status 0 iff every check passed."""
    passed = bool(ctx.checks) and all(c.passed for c in ctx.checks)
    errored = any(c.evidence_error for c in ctx.checks)
    document = {
        "case": ctx.case,
        "pack": {"id": ctx.pack_id, "version": ctx.pack_version},
        "outcome": "pass" if passed else ("error" if errored else "fail"),
        "failed_checks": [c.id for c in ctx.checks if not c.passed],
        "checks": [asdict(c) for c in ctx.checks],
        **(extra or {}),
    }
    ctx.output.parent.mkdir(parents=True, exist_ok=True)
    ctx.output.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    for check in ctx.checks:
        print(f"{'ok  ' if check.passed else 'FAIL'} {check.id}: {check.detail.splitlines()[0] if check.detail else ''}")
    return 0 if passed else 1


def standard_python_verifier(ctx: Context, *, protected: tuple[str, ...], allowed: tuple[str, ...],
                             visible_tests: list[str], hidden_dir: Path | None, python_path: str = ".",
                             timeout: float = 60.0) -> int:  # fmt: skip
    """Evidence → something changed → scope → protected tests → visible tests → hidden tests."""
    if check_evidence(ctx):
        check_changed(ctx)
        check_scope(ctx, allowed)
        check_protected(ctx, protected)
        env = subprocess_env({"PYTHONPATH": str((ctx.workspace / python_path).resolve())})
        check_command(ctx, "visible-tests", visible_tests, env=env, timeout=timeout)
        if hidden_dir is not None:
            check_hidden_tests(ctx, hidden_dir, python_path=python_path, timeout=timeout)
    return finish(ctx)
