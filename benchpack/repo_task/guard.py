"""Detecting writes outside the allowed paths during a task or verifier phase.

Without an OS sandbox the runner cannot *prevent* an external agent or a
verifier (same user, same filesystem) from writing elsewhere. It can notice
it in the places that matter for trust — the pack directory and the run
output directory — by comparing cheap metadata snapshots (type, size, mtime,
mode, inode) taken before and after the phase. A write that restores size
and mtime exactly, and writes anywhere else on the machine, go unnoticed;
docs/repo-tasks.md says so.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

MAX_LISTED = 20


def _stamp(root: Path, excluded: tuple[Path, ...]) -> dict[str, tuple]:
    stamps: dict[str, tuple] = {}
    if not root.exists():
        return stamps
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        directory = Path(dirpath)
        dirnames[:] = [d for d in dirnames if directory / d not in excluded]
        for name in dirnames + filenames:
            path = directory / name
            if path in excluded:
                continue
            try:
                st = path.lstat()
            except FileNotFoundError:
                continue
            is_dir = name in dirnames and not path.is_symlink()
            stamps[str(path)] = (st.st_mode, st.st_ino) if is_dir else (st.st_mode, st.st_ino, st.st_size, st.st_mtime_ns)
    return stamps


@dataclass
class OutsideWriteGuard:
    """Snapshot `roots` (minus `allowed`) now; `changes()` lists what differs later."""

    roots: tuple[Path, ...]
    allowed: tuple[Path, ...]

    def __post_init__(self) -> None:
        self.roots = tuple(Path(r).resolve() for r in self.roots)
        self.allowed = tuple(Path(a).resolve() for a in self.allowed)
        self._before = self._snapshot()

    def _snapshot(self) -> dict[str, tuple]:
        combined: dict[str, tuple] = {}
        for root in self.roots:
            combined.update(_stamp(root, self.allowed))
        return combined

    def changes(self) -> list[str]:
        after = self._snapshot()
        changed = [p for p in set(self._before) | set(after) if self._before.get(p) != after.get(p)]
        return sorted(changed)


def describe_changes(phase: str, changed: list[str]) -> str:
    if not changed:
        return ""
    listed = ", ".join(changed[:MAX_LISTED])
    more = f" (and {len(changed) - MAX_LISTED} more)" if len(changed) > MAX_LISTED else ""
    return f"\nbenchpack: warning: the {phase} changed paths outside the prepared workspace: {listed}{more}\n"


class PackRestorer:
    """Put the pack directory back exactly as it was after a phase wrote into it.

    Detection alone (OutsideWriteGuard) cannot make the source byte-identical
    again, and the next repetition, the audit, or the next run would measure
    against a modified pack. So the executor keeps one private copy of the
    pack, taken before the first guarded phase, and restores every path under
    the pack root that a phase added, changed or deleted.
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
            _remove(path)
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


def _remove(path: Path) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path)  # a directory that was there before comes back whole from the copy
    # anything else (already gone) needs nothing
