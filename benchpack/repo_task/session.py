"""The workspace path boundary (D-022) shared by harness helpers and the fenced executor.

A workspace path is a relative POSIX path that, after following every symlink
that already exists, names something strictly inside the prepared workspace.
`.git` components are refused as well: a task may change the project, not
repository metadata that Git tools (including our own `git apply`) would act
on.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from benchpack.errors import Problem
from benchpack.repo_task import RepoTaskError


class UnsafeWorkspacePath(RepoTaskError):
    def __init__(self, path: object, reason: str):
        self.path = path
        self.reason = reason
        super().__init__(Problem("workspace", repr(path), reason))


def unsafe_path_reason(relative: object) -> str | None:
    """Why `relative` is not an acceptable workspace-relative path, lexically (None: fine)."""
    if not isinstance(relative, str):
        return "path must be a string"
    if relative == "" or relative.strip() == "":
        return "path is empty"
    if "\0" in relative:
        return "path contains a NUL byte"
    if "\\" in relative:
        return "path contains a backslash"
    if relative.startswith("/") or (len(relative) > 1 and relative[1] == ":"):
        return "absolute paths are not allowed"
    parts = PurePosixPath(relative).parts
    if ".." in parts:
        return "'..' components are not allowed"
    if any(part == ".git" for part in parts):
        return ".git paths are not allowed"
    if parts in ((), (".",)):
        return "path names the workspace root"
    return None


@dataclass(frozen=True)
class WorkspaceFiles:
    """Validated file operations inside one prepared workspace."""

    root: Path

    @property
    def _real_root(self) -> Path:
        return Path(os.path.realpath(self.root))

    def resolve(self, relative: str) -> Path:
        """The real path `relative` names; raises UnsafeWorkspacePath if it leaves the workspace."""
        reason = unsafe_path_reason(relative)
        if reason:
            raise UnsafeWorkspacePath(relative, reason)
        real_root = self._real_root
        real = Path(os.path.realpath(real_root / relative))
        if real == real_root or not real.is_relative_to(real_root):
            raise UnsafeWorkspacePath(relative, "resolves outside the workspace (through a symlink)")
        return real

    def _entry(self, relative: str) -> Path:
        """The un-followed directory entry for `relative` (its parent must be safe)."""
        self.resolve(relative)
        entry = self._real_root / relative
        parent = Path(os.path.realpath(entry.parent))
        if parent != self._real_root and not parent.is_relative_to(self._real_root):
            raise UnsafeWorkspacePath(relative, "resolves outside the workspace (through a symlink)")
        return parent / entry.name

    def _inside(self, path: Path) -> bool:
        real = Path(os.path.realpath(path))
        return real != self._real_root and real.is_relative_to(self._real_root)

    def _walk(self):
        for dirpath, dirnames, filenames in os.walk(self._real_root, followlinks=False):
            yield Path(dirpath), dirnames, filenames

    def list_files(self) -> list[str]:
        """Regular files (and in-workspace symlinks to regular files), sorted POSIX paths."""
        root = self._real_root
        found = []
        for directory, dirnames, filenames in self._walk():
            for name in filenames + [d for d in dirnames if (directory / d).is_symlink()]:
                path = directory / name
                if path.is_symlink() and not self._inside(path):
                    continue
                if path.is_file():
                    found.append(path.relative_to(root).as_posix())
        return sorted(found)

    def list_dirs(self) -> list[str]:
        """Nested real directories (never symlinks, never the root), sorted POSIX paths."""
        root = self._real_root
        found = []
        for directory, dirnames, _ in self._walk():
            for name in dirnames:
                path = directory / name
                if not path.is_symlink() and path.is_dir():
                    found.append(path.relative_to(root).as_posix())
        return sorted(found)

    def exists(self, relative: str) -> bool:
        """True only for an existing regular file (or in-workspace symlink to one)."""
        return self.resolve(relative).is_file()

    def read_text(self, relative: str) -> str:
        return self.resolve(relative).read_bytes().decode("utf-8")

    def write_text(self, relative: str, content: str) -> None:
        """Write UTF-8 text exactly as given, all or nothing.

        The bytes go to a temporary file that replaces the target in one
        rename; on failure the temporary file and any directories this call
        created are removed, so a failed write leaves the workspace unchanged.
        """
        target = self.resolve(relative)
        if target.is_dir():
            raise IsADirectoryError(errno.EISDIR, "is a directory", relative)
        created = [p for p in reversed(target.parents) if not p.exists()]
        temp: Path | None = None
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            target = self.resolve(relative)  # re-check: the tree may have changed since
            fd, name = tempfile.mkstemp(dir=target.parent, prefix=".benchpack-", suffix=".tmp")
            temp = Path(name)
            with os.fdopen(fd, "wb") as handle:
                handle.write(content.encode("utf-8"))
            os.chmod(temp, stat.S_IMODE(target.stat().st_mode) if target.exists() else 0o644)
            os.replace(temp, target)
        except BaseException:
            if temp is not None:
                temp.unlink(missing_ok=True)
            for directory in reversed(created):
                try:
                    directory.rmdir()
                except OSError:
                    pass
            raise

    def delete(self, relative: str) -> bool:
        """Delete a regular file or an in-workspace symlink-to-file entry (never its target)."""
        entry = self._entry(relative)
        try:
            mode = entry.lstat().st_mode
        except FileNotFoundError:
            return False
        if stat.S_ISLNK(mode):
            if not (self._inside(entry) and entry.is_file()):
                return False
            entry.unlink()
            return True
        if not stat.S_ISREG(mode):
            return False
        entry.unlink()
        return True
