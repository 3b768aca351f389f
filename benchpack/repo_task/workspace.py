"""Disposable per-repetition copies of a pack's `kind = "repo"` fixture.

The fixture is immutable source: it is only ever read. Every measured
repetition gets a fresh copy at `<out>/workspace/<case>/rep-NNN/`; an existing
destination is an error, never a merge, so two executions can never share
mutations.
"""

from __future__ import annotations

import os
import posixpath
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path

from benchpack.errors import Problem
from benchpack.repo_task import RepoTaskError, rep_stem, repo_task_problem


@dataclass(frozen=True)
class PreparedWorkspace:
    path: Path  # absolute
    relative_path: str  # POSIX, relative to the run output directory
    source_fixture_id: str
    source_path: str  # manifest-declared fixture path, never the resolved one
    source_root: Path  # resolved fixture directory (for patch capture)

    def record(self) -> dict:
        """The `workspace` object of a measured run.jsonl row."""
        return {
            "path": self.relative_path,
            "source_fixture_id": self.source_fixture_id,
            "source_path": self.source_path,
        }


def workspace_relative_path(case_id: str, repetition: int) -> str:
    return f"workspace/{case_id}/{rep_stem(repetition)}"


def check_fixture_tree(root: Path) -> list[str]:
    """Reasons the fixture tree cannot be copied safely (empty list = fine).

    Absolute symlinks and symlinks that leave the fixture are rejected, both
    lexically (seen from the link's own directory, as they will be seen from
    inside the copy) and after resolving every link (so a chain of links
    cannot escape either). FIFOs, sockets and devices are rejected because
    copying them would block or copy host state.
    """
    root = root.resolve(strict=True)
    problems: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        directory = Path(dirpath)
        for name in sorted(dirnames + filenames):
            entry = directory / name
            rel = entry.relative_to(root).as_posix()
            mode = entry.lstat().st_mode
            if stat.S_ISLNK(mode):
                reason = _symlink_escape_reason(root, entry, rel)
                if reason:
                    problems.append(f"{rel}: {reason}")
            elif not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                problems.append(f"{rel}: is not a regular file, directory or symlink")
    return sorted(problems)


def _symlink_escape_reason(root: Path, link: Path, rel: str) -> str | None:
    target = os.readlink(link)
    if os.path.isabs(target):
        return f"absolute symlink to {target!r} is not allowed"
    lexical = posixpath.normpath(posixpath.join(posixpath.dirname(rel), target.replace(os.sep, "/")))
    if lexical == ".." or lexical.startswith("../"):
        return f"symlink target {target!r} points outside the fixture"
    resolved = Path(os.path.realpath(link))
    if resolved != root and not resolved.is_relative_to(root):
        return f"symlink target {target!r} resolves outside the fixture"
    return None


def prepare_workspace(fixture, out: Path, case_id: str, repetition: int) -> PreparedWorkspace:
    """Copy `fixture` (a packs.Fixture of kind repo) into a fresh workspace."""
    source_root = Path(fixture.resolved)
    if not source_root.is_dir():
        raise repo_task_problem(case_id, f"repo fixture {fixture.id!r} is not a directory: {fixture.path}")
    problems = check_fixture_tree(source_root)
    if problems:
        raise RepoTaskError(
            [Problem(f"repo-task {case_id}", f"fixture {fixture.id} ({fixture.path})", p) for p in problems]
        )
    relative = workspace_relative_path(case_id, repetition)
    destination = Path(out).resolve() / relative
    if os.path.lexists(destination):
        raise repo_task_problem(case_id, f"workspace {relative} already exists; refusing to merge into it")
    destination.parent.mkdir(parents=True, exist_ok=True)
    # symlinks=True keeps (already validated) internal links as links instead
    # of following them; copytree refuses an existing destination by itself.
    shutil.copytree(source_root, destination, symlinks=True)
    leaked = check_fixture_tree(destination)
    if leaked:  # defence in depth: the copy must be exactly as contained as the source
        shutil.rmtree(destination)
        raise repo_task_problem(case_id, f"workspace copy of {fixture.id!r} is not self-contained: {leaked[0]}")
    return PreparedWorkspace(
        path=destination,
        relative_path=relative,
        source_fixture_id=fixture.id,
        source_path=fixture.path,
        source_root=source_root.resolve(),
    )
