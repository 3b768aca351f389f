"""Deterministic directory-snapshot diff: source fixture vs. post-task workspace.

Neither side needs to be a Git repository. The output uses Git's extended
header style so that, for text files and symlinks, `git apply` on a copy of the
fixture reproduces the workspace (tests check this round trip):

* paths are sorted POSIX relative paths; empty directories are ignored;
* UTF-8 text is compared after normalising CRLF/CR to LF, and emitted as a
  unified diff with 3 lines of context (`\\ No newline at end of file` where due);
* files that are not UTF-8 (or contain NUL) get one marker line instead:
  `Binary files a/<p> and b/<p> differ`, `Binary file b/<p> added`,
  `Binary file a/<p> deleted`;
* symlinks are compared by target string and emitted as a text diff of the
  target (Git's mode 120000 shape); a file/symlink type change is a delete
  followed by an add;
* FIFOs, sockets and devices are never opened: `Special file b/<p> skipped`;
* permission-only changes are ignored.
"""

from __future__ import annotations

import difflib
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from benchpack.repo_task import rep_stem
from benchpack.repo_task.nofollow import NotRegular, read_regular

NO_NEWLINE = "\\ No newline at end of file"


@dataclass(frozen=True)
class Entry:
    kind: str  # "file" | "symlink" | "special"
    data: bytes  # file bytes, or the link target encoded with surrogateescape
    executable: bool = False

    @property
    def mode(self) -> str:
        if self.kind == "symlink":
            return "120000"
        return "100755" if self.executable else "100644"


def snapshot(root: Path) -> dict[str, Entry]:
    """Every non-directory entry below `root`, keyed by POSIX relative path."""
    entries: dict[str, Entry] = {}
    root = Path(root)
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        directory = Path(dirpath)
        names = list(filenames)
        # os.walk lists symlinks to directories under dirnames; they are entries, not trees.
        names += [d for d in dirnames if (directory / d).is_symlink()]
        for name in names:
            path = directory / name
            rel = path.relative_to(root).as_posix()
            mode = path.lstat().st_mode
            if stat.S_ISLNK(mode):
                entries[rel] = Entry("symlink", os.fsencode(os.readlink(path)))
            elif stat.S_ISREG(mode):
                try:  # the workspace is candidate-written: never follow a link swapped in since lstat
                    entries[rel] = Entry("file", read_regular(path), bool(mode & stat.S_IXUSR))
                except NotRegular:
                    entries[rel] = Entry("special", b"")
            else:
                entries[rel] = Entry("special", b"")
    return entries


def _text(data: bytes) -> str | None:
    if b"\0" in data:
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _lines(entry: Entry | None) -> list[str] | None:
    """Diffable lines of an entry (None: binary)."""
    if entry is None:
        return []
    if entry.kind == "symlink":
        return [entry.data.decode("utf-8", "surrogateescape")]  # Git: target, no newline
    text = _text(entry.data)
    return None if text is None else text.splitlines(keepends=True)


def _hunks(old: list[str], new: list[str]) -> list[str]:
    out: list[str] = []
    diff = difflib.unified_diff(old, new, lineterm="\n", n=3)
    for index, line in enumerate(diff):
        if index < 2:  # difflib's own ---/+++ lines; we write Git-style headers ourselves
            continue
        if line.endswith("\n"):
            out.append(line)
        else:
            out.append(line + "\n")
            out.append(NO_NEWLINE + "\n")
    return out


def _one_sided(rel: str, entry: Entry, added: bool) -> list[str]:
    if entry.kind == "special":
        return [f"Special file {'b' if added else 'a'}/{rel} skipped\n"]
    header = [f"diff --git a/{rel} b/{rel}\n", f"{'new' if added else 'deleted'} file mode {entry.mode}\n"]
    lines = _lines(entry)
    if lines is None:
        return header + [f"Binary file b/{rel} added\n" if added else f"Binary file a/{rel} deleted\n"]
    if not lines:  # empty file: Git writes the header only
        return header
    old, new = ([], lines) if added else (lines, [])
    paths = ["--- /dev/null\n", f"+++ b/{rel}\n"] if added else [f"--- a/{rel}\n", "+++ /dev/null\n"]
    return header + paths + _hunks(old, new)


def _changed(rel: str, old: Entry, new: Entry) -> list[str]:
    if old.kind != new.kind or "special" in (old.kind, new.kind):
        if old.kind == new.kind == "special":
            return []
        return _one_sided(rel, old, added=False) + _one_sided(rel, new, added=True)
    if old.data == new.data:
        return []
    old_lines, new_lines = _lines(old), _lines(new)
    header = [f"diff --git a/{rel} b/{rel}\n"]
    if old_lines is None or new_lines is None:
        return header + [f"Binary files a/{rel} and b/{rel} differ\n"]
    if old_lines == new_lines:  # only line endings differed
        return []
    return header + [f"--- a/{rel}\n", f"+++ b/{rel}\n"] + _hunks(old_lines, new_lines)


def diff_trees(source: Path, workspace: Path) -> str:
    """The deterministic patch text turning `source` into `workspace`."""
    before, after = snapshot(source), snapshot(workspace)
    out: list[str] = []
    for rel in sorted(set(before) | set(after)):
        old, new = before.get(rel), after.get(rel)
        if old is None:
            out += _one_sided(rel, new, added=True)
        elif new is None:
            out += _one_sided(rel, old, added=False)
        else:
            out += _changed(rel, old, new)
    return "".join(out)


def patch_relative_path(case_id: str, repetition: int) -> str:
    return f"patch/{case_id}/{rep_stem(repetition)}.diff"


def capture_patch(source: Path, workspace: Path, out: Path, case_id: str, repetition: int) -> dict:
    """Write `patch/<case>/rep-NNN.diff` (even when empty); return the row's `patch` object."""
    relative = patch_relative_path(case_id, repetition)
    target = Path(out) / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(diff_trees(source, workspace).encode("utf-8", "surrogateescape"))
    return {"path": relative}
