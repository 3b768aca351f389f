"""Guarded paths: writes outside the workspace during an agent or verifier phase fail the case.

With bubblewrap the candidate cannot write anywhere but its workspace (every
other path is read-only, an empty tmpfs, or not mounted), so the guard is a
second line of defence. Without a sandbox (`--unsandboxed`) it is the only
one: the runner snapshots the guarded roots before each phase and compares
afterwards:

* the pack directory — content hashes (packs are small), so even a rewrite
  that restores size and mtime is seen; every change is undone from a
  private copy (`PackRestorer`) so the next execution measures the real pack;
* the run directory minus the phase's own outputs — metadata;
* in `none` mode also the runner's Python environment (venv and base
  installation, to depth 2: a planted `.pth` or `sitecustomize` would run
  inside every later verifier) and `$HOME` to depth 2 plus the user
  site-packages. Nothing there is deleted — the runner cannot tell a
  candidate's write from another program's: a startup hook the phase added
  (`.pth`, `sitecustomize`) is renamed so it cannot run inside later
  verifiers, any environment change stops the run after the row (naming the
  paths to inspect), and a change in `$HOME` fails the case.

Any change makes the case fail with a recorded reason (docs/repo-tasks.md).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import site
import sys
import sysconfig
import tempfile
from dataclasses import dataclass
from pathlib import Path

from benchpack.repo_task.nofollow import read_regular

MAX_LISTED = 20
PACK, RUN, ENVIRONMENT, HOME = "pack", "run", "environment", "home"
HASH_LIMIT_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class GuardedRoot:
    path: Path
    kind: str  # PACK | RUN | ENVIRONMENT | HOME
    max_depth: int | None = None  # None: the whole tree
    hash_content: bool = False


@dataclass(frozen=True)
class Change:
    path: str
    kind: str  # which guarded root it is under
    how: str  # "added" | "changed" | "deleted"


def _digest(path: Path) -> str | None:
    try:
        if path.stat().st_size > HASH_LIMIT_BYTES:
            return None
        return hashlib.sha256(read_regular(path)).hexdigest()
    except OSError:
        return None


def _stamp(root: GuardedRoot, excluded: tuple[Path, ...]) -> dict[str, tuple]:
    stamps: dict[str, tuple] = {}
    if not root.path.exists():
        return stamps
    base_depth = len(root.path.parts)
    for dirpath, dirnames, filenames in os.walk(root.path, followlinks=False):
        directory = Path(dirpath)
        depth = len(directory.parts) - base_depth + 1
        dirnames[:] = [d for d in dirnames if directory / d not in excluded]
        entries = dirnames + filenames
        if root.max_depth is not None and depth >= root.max_depth:
            dirnames[:] = []  # entries at this depth are stamped, not descended into
        for name in entries:
            path = directory / name
            if path in excluded:
                continue
            try:
                st = path.lstat()
            except FileNotFoundError:
                continue
            if os.path.isdir(path) and not path.is_symlink():
                stamps[str(path)] = ("d", st.st_mode, st.st_ino)
                continue
            stamp = (st.st_mode, st.st_ino, st.st_size, st.st_mtime_ns)
            if root.hash_content and path.is_file() and not path.is_symlink():
                stamp = (st.st_mode, _digest(path))
            elif path.is_symlink():
                stamp = (st.st_mode, os.readlink(path))
            stamps[str(path)] = stamp
    return stamps


class OutsideWriteGuard:
    """Snapshot `roots` (minus `allowed`) now; `changes()` lists what differs later."""

    def __init__(self, roots: tuple[GuardedRoot | Path, ...], allowed: tuple[Path, ...]) -> None:
        self.roots = tuple(r if isinstance(r, GuardedRoot) else GuardedRoot(Path(r), RUN) for r in roots)
        self.roots = tuple(GuardedRoot(Path(r.path).resolve(), r.kind, r.max_depth, r.hash_content) for r in self.roots)
        self.allowed = tuple(Path(a).resolve() for a in allowed)
        self._before = self._snapshot()

    def _snapshot(self) -> dict[str, tuple[str, tuple]]:
        combined: dict[str, tuple[str, tuple]] = {}
        for root in self.roots:
            for path, stamp in _stamp(root, self.allowed).items():
                combined.setdefault(path, (root.kind, stamp))
        return combined

    def changes(self) -> list[Change]:
        after = self._snapshot()
        found = []
        for path in sorted(set(self._before) | set(after)):
            before, now = self._before.get(path), after.get(path)
            if before == now:
                continue
            kind = (now or before)[0]
            how = "added" if before is None else "deleted" if now is None else "changed"
            found.append(Change(path, kind, how))
        return found


def describe_changes(phase: str, changed: list[Change]) -> str:
    """One line for the phase's stderr log."""
    if not changed:
        return ""
    listed = ", ".join(c.path for c in changed[:MAX_LISTED])
    more = f" (and {len(changed) - MAX_LISTED} more)" if len(changed) > MAX_LISTED else ""
    return f"\nbenchpack: the {phase} changed guarded paths outside the workspace (the case fails): {listed}{more}\n"


ENVIRONMENT_DEPTH = 2  # top-level modules, .pth files, packages' own modules: ~0.3 s to stamp, not 8 s


def environment_roots() -> tuple[GuardedRoot, ...]:
    """Where the runner's Python (venv and base installation) loads code from, and $HOME,
    each to depth 2 — for `none` mode. Deeper files (e.g. django/test/runner.py) are not
    watched: walking every installed file costs seconds per phase (docs/repo-tasks.md)."""
    paths: set[str] = set()
    bases = ({}, {"base": sys.base_prefix, "platbase": sys.base_exec_prefix})
    for scheme_vars in bases:
        for key in ("stdlib", "platstdlib", "purelib", "platlib", "scripts"):
            path = sysconfig.get_path(key, vars=scheme_vars)
            if path and os.path.isdir(path):
                paths.add(os.path.realpath(path))
    roots = [GuardedRoot(Path(p), ENVIRONMENT, max_depth=ENVIRONMENT_DEPTH) for p in sorted(paths)]
    home = Path.home()
    if home.is_dir() and home != Path("/"):
        roots.append(GuardedRoot(home, HOME, max_depth=2))
    user_site = Path(site.getusersitepackages())
    if user_site.is_dir():
        roots.append(GuardedRoot(user_site, ENVIRONMENT))
    return tuple(roots)


class PackRestorer:
    """Put the pack directory back exactly as it was after a phase wrote into it.

    Detection alone cannot make the source byte-identical again, and the next
    repetition, the audit, or the next run would measure against a modified
    pack. So the executor keeps one private copy of the pack, taken before the
    first guarded phase, and restores every path under the pack root that a
    phase added, changed or deleted.
    """

    def __init__(self, pack_root: Path) -> None:
        self.pack_root = Path(pack_root).resolve()
        self._copy: tempfile.TemporaryDirectory | None = None

    def snapshot(self) -> None:
        if self._copy is None:
            self._copy = tempfile.TemporaryDirectory(prefix="benchpack-pack-copy-")
            shutil.copytree(self.pack_root, Path(self._copy.name) / "pack", symlinks=True)

    def restore(self, changed: list[str]) -> list[str]:
        """Undo `changed` paths that lie under the pack root; returns the ones restored."""
        if self._copy is None:
            return []
        original_root = Path(self._copy.name) / "pack"
        inside = [Path(p) for p in changed if Path(p) == self.pack_root or self.pack_root in Path(p).parents]
        # deepest first, so an added directory is emptied before it is removed
        for path in sorted(inside, key=lambda p: len(p.parts), reverse=True):
            original = original_root / path.relative_to(self.pack_root)
            remove(path)
            if original.is_symlink():
                path.parent.mkdir(parents=True, exist_ok=True)
                os.symlink(os.readlink(original), path)
            elif original.is_dir():
                path.parent.mkdir(parents=True, exist_ok=True)
                shutil.copytree(original, path, symlinks=True)
            elif original.exists():
                path.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(original, path)
        return [str(p) for p in inside]


STARTUP_HOOKS = ("sitecustomize.py", "sitecustomize.pyc", "usercustomize.py", "usercustomize.pyc")
DISABLED_SUFFIX = ".disabled-by-benchpack"


def environment_changes(changes: list[Change]) -> tuple[list[str], list[str]]:
    """(changed environment paths, startup hooks among them that were disabled).

    A hook the phase *added* (`*.pth`, `sitecustomize`, `usercustomize`) would
    run inside every later Python process, verifiers included: it is renamed
    to `<name>.disabled-by-benchpack` — kept for inspection, never deleted.
    Nothing else is touched (the runner cannot tell a candidate's write from a
    concurrent `pip install`); the caller stops the run.
    """
    touched, disabled = [], []
    for change in changes:
        if change.kind != ENVIRONMENT:
            continue
        touched.append(change.path)
        path = Path(change.path)
        hook = path.suffix == ".pth" or path.name in STARTUP_HOOKS
        if change.how == "added" and hook and path.is_file() and not path.is_symlink():
            try:
                path.rename(path.with_name(path.name + DISABLED_SUFFIX))
                disabled.append(change.path)
            except OSError:
                pass
    return touched, disabled


def remove(path: Path) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path)  # a directory that was there before comes back whole from the copy
    # anything else (already gone) needs nothing
