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
