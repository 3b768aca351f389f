"""Parsing model output for the fenced-patch executor (pure functions, no I/O).

* `extract_fenced_block`: the first CommonMark fenced block whose info string
  is exactly `diff` or `patch`; other fenced blocks are skipped whole.
* `parse_replacement`: the D-031 `*** Begin File: <path>` … `*** End File` block.
* `diff_paths` / `diff_symlink_targets`: every path a unified diff touches, as
  `git apply` (-p1) will see it, so unsafe diffs are refused before Git runs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

FENCE_RE = re.compile(r"^( {0,3})(`{3,}|~{3,})(.*)$")
PATCH_INFO_STRINGS = ("diff", "patch")
BEGIN_FILE = "*** Begin File:"
END_FILE = "*** End File"


@dataclass(frozen=True)
class FencedBlock:
    info: str
    body: str  # LF line endings


def extract_fenced_block(text: str) -> FencedBlock | None:
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    index = 0
    while index < len(lines):
        opening = FENCE_RE.match(lines[index])
        index += 1
        if not opening:
            continue
        indent, fence, info = len(opening.group(1)), opening.group(2), opening.group(3).strip()
        if fence[0] == "`" and "`" in info:  # not a fence per CommonMark
            continue
        closing = re.compile(r"^ {0,3}" + re.escape(fence[0]) + "{" + str(len(fence)) + r",}[ \t]*$")
        body: list[str] = []
        while index < len(lines) and not closing.match(lines[index]):
            line = lines[index]
            strip = min(indent, len(line) - len(line.lstrip(" ")))
            body.append(line[strip:])
            index += 1
        index += 1  # the closing fence (an unclosed fence runs to the end, as in CommonMark)
        if info in PATCH_INFO_STRINGS:
            return FencedBlock(info=info, body="\n".join(body) + ("\n" if body else ""))
    return None


@dataclass(frozen=True)
class Replacement:
    path: str
    content: str  # LF-canonicalised, ends with "\n"


class ReplacementError(ValueError):
    pass


def is_replacement(body: str) -> bool:
    first = next((line for line in body.split("\n") if line.strip()), "")
    return first.startswith(BEGIN_FILE)


def parse_replacement(body: str) -> Replacement:
    lines = body.split("\n")
    while lines and not lines[-1].strip():
        lines.pop()
    while lines and not lines[0].strip():
        lines.pop(0)
    path = lines[0][len(BEGIN_FILE):].strip()
    if not path:
        raise ReplacementError("'*** Begin File:' names no path")
    if len(lines) < 2 or lines[-1].rstrip() != END_FILE:
        raise ReplacementError("missing final '*** End File' marker line")
    content_lines = lines[1:-1]
    for line in content_lines:
        if line.startswith(BEGIN_FILE) or line.rstrip() == END_FILE:
            raise ReplacementError("only one file per block: found a second marker line inside the content")
    if not "".join(content_lines).strip():
        raise ReplacementError("replacement content is empty")
    return Replacement(path=path, content="\n".join(content_lines) + "\n")


_C_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}


def _git_unquote(name: str) -> str:
    """Git's C-style quoting of unusual path names (`"a/caf\\303\\251"`)."""
    if not (len(name) >= 2 and name[0] == '"' and name[-1] == '"'):
        return name
    out = bytearray()
    body, i = name[1:-1], 0
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if nxt in "01234567" and re.match(r"[0-7]{3}", body[i + 1 : i + 4]):
                out.append(int(body[i + 1 : i + 4], 8))
                i += 4
                continue
            out.append(_C_ESCAPES.get(nxt, ord(nxt)))
            i += 2
            continue
        out += ch.encode("utf-8")
        i += 1
    return out.decode("utf-8", "surrogateescape")


def _strip_component(path: str) -> str:
    """What `git apply -p1` makes of a header path."""
    return path.split("/", 1)[1] if "/" in path else path


def _header_path(rest: str) -> str:
    rest = rest.rstrip("\n")
    if rest.startswith('"'):
        end = rest.find('"', 1)
        while end != -1 and rest[end - 1] == "\\":
            end = rest.find('"', end + 1)
        return _git_unquote(rest[: end + 1]) if end != -1 else rest
    return rest.split("\t", 1)[0].rstrip()


@dataclass(frozen=True)
class DiffPath:
    raw: str  # as written in the diff
    path: str  # after -p1


def _is_header_pair(lines: list[str], index: int) -> bool:
    """`--- x` directly followed by `+++ y`: a file header, not hunk lines `-- x`/`++ y`."""
    return lines[index].startswith("--- ") and index + 1 < len(lines) and lines[index + 1].startswith("+++ ")


def diff_paths(body: str) -> list[DiffPath]:
    """Every path named by ---/+++ headers, `diff --git` lines and rename/copy headers."""
    found: list[DiffPath] = []
    lines = body.split("\n")
    for index, line in enumerate(lines):
        names: list[tuple[str, bool]] = []  # (name, strip a/ b/ prefix)
        if _is_header_pair(lines, index):
            names.append((_header_path(line[4:]), True))
            names.append((_header_path(lines[index + 1][4:]), True))
        elif line.startswith("diff --git "):
            rest = line[len("diff --git ") :]
            if rest.startswith('"'):
                first = _header_path(rest)
                names.append((first, True))
            else:
                # "a/x b/x": split on the last " b/" (paths may contain spaces)
                cut = rest.rfind(" b/")
                names += [(rest[:cut], True), (rest[cut + 1 :], True)] if cut > 0 else [(rest, True)]
        else:
            for prefix in ("rename from ", "rename to ", "copy from ", "copy to "):
                if line.startswith(prefix):
                    names.append((_header_path(line[len(prefix) :]), False))
        for name, strip in names:
            if name == "/dev/null":
                continue
            found.append(DiffPath(raw=name, path=_strip_component(name) if strip else name))
    return found


def diff_symlink_targets(body: str, existing_links: frozenset[str] = frozenset()) -> list[tuple[str, str]]:
    """(path, target) for every symlink target a diff writes.

    A section writes a symlink when Git marks it with mode 120000 (new file,
    new mode, or index line) or when its path already is a symlink in the
    workspace (`existing_links`): `git apply` then rewrites the link target.
    """
    targets: list[tuple[str, str]] = []
    current: str | None = None
    is_link = False
    lines = body.split("\n")
    for index, line in enumerate(lines):
        if line.startswith("diff --git "):
            current, is_link = None, False
        elif line.startswith(("new file mode 120000", "new mode 120000")) or (
            line.startswith("index ") and line.rstrip().endswith(" 120000")
        ):
            is_link = True
        elif line.startswith("+++ ") and index > 0 and _is_header_pair(lines, index - 1):
            name = _header_path(line[4:])
            current = None if name == "/dev/null" else _strip_component(name)
        elif current and (is_link or current in existing_links) and line.startswith("+"):
            targets.append((current, line[1:]))
    return targets
