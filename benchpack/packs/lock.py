"""Each bundled pack's content hash, held to its version in `benchpacks/VERSIONS.lock`.

The format's rule: a change to prompts, fixtures or scoring is a new
version, so results of two different workloads never share a name. The
lock file has one line per bundled pack, `<id> <version> sha256:<hex>`;
`tests/data/packs/test_pack_versions.py` fails when a pack's content changed and its
version did not (or the line was not refreshed). One line per pack means two
people changing two packs touch two different lines.

What the hash covers: every file of the pack directory (POSIX path and
bytes, text files with CRLF read as LF so a Windows checkout hashes the
same), except the top-level README.md, the `audit/` fixtures (they test the
verifier, they are not the workload) and Python caches; and the final
assembled prompt of every case, so a change in how the loader builds a
prompt (say, the blank line before an appended fixture) shows up too; and
the core verifier kit the pack pins (`verify/verifykit.toml`), whose bytes
decide verdicts as much as the pack's own verifier does.

    uv run python -m benchpack.packs.lock --check            # what the test checks
    uv run python -m benchpack.packs.lock --update ID [ID...] # after bumping those packs' versions
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path

from benchpack.packs.loader import bundled_packs_dir, load_pack

LOCK_NAME = "VERSIONS.lock"
EXCLUDED_TOP_LEVEL = {"README.md", "audit"}
HEADER = """\
# Content hash of every bundled pack: <pack id> <version> sha256:<hash>.
# A change to what a pack sends or scores changes its hash. Bump the pack's
# version in its benchpack.toml, then refresh its line (only its line):
#   uv run python -m benchpack.packs.lock --update <pack-id>
# tests/data/packs/test_pack_versions.py fails when a hash changes and its version does not.
# How the hash is made and why: benchpack/packs/lock.py, docs/packs.md.
"""


def lock_path(packs_dir: Path | None = None) -> Path:
    return (packs_dir or bundled_packs_dir()) / LOCK_NAME


def _included(relative: Path) -> bool:
    parts = relative.parts
    if parts[0] in EXCLUDED_TOP_LEVEL:
        return False
    return not any(p == "__pycache__" or p.startswith(".") for p in parts) and relative.suffix != ".pyc"


def _normalized(data: bytes) -> bytes:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return data
    return data.replace(b"\r\n", b"\n")


def content_hash(pack_dir: Path) -> str:
    pack_dir = Path(pack_dir)
    digest = hashlib.sha256()
    files = sorted((p for p in pack_dir.rglob("*") if p.is_file() and _included(p.relative_to(pack_dir))),
                   key=lambda p: p.relative_to(pack_dir).as_posix())
    for path in files:
        digest.update(b"file\0" + path.relative_to(pack_dir).as_posix().encode() + b"\0")
        digest.update(_normalized(path.read_bytes()) + b"\0")
    pack = load_pack(pack_dir)
    for case in pack.cases:
        digest.update(b"prompt\0" + case.id.encode() + b"\0" + case.prompt.encode() + b"\0")
    for kit in _pinned_kits(pack):
        digest.update(b"kit\0" + kit.name.encode() + b"\0" + _normalized(kit.read_bytes()) + b"\0")
    return "sha256:" + digest.hexdigest()


def _pinned_kits(pack) -> list[Path]:
    """The core verifier kit files the pack's verifiers import (`verify/verifykit.toml`), so the
    kit version a verdict depends on is part of the workload's identity."""
    from benchpack.repo_task.verify import kit_directory  # the core kit lives with the repo-task runner

    kits: dict[str, Path] = {}
    for case in pack.cases:
        script = getattr(case.scoring, "script_resolved", None) if case.scoring is not None else None
        if script:
            directory = kit_directory(Path(script))
            if directory is not None:
                kits[directory.name] = directory / "verifykit.py"
    return [kits[name] for name in sorted(kits)]


def read_lock(path: Path) -> dict[str, tuple[str, str]]:
    entries: dict[str, tuple[str, str]] = {}
    if not path.is_file():
        return entries
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            pack_id, version, digest = line.split()
            entries[pack_id] = (version, digest)
    return entries


def write_lock(path: Path, entries: dict[str, tuple[str, str]]) -> None:
    lines = [f"{pack_id} {version} {digest}" for pack_id, (version, digest) in sorted(entries.items())]
    path.write_text(HEADER + "\n".join(lines) + "\n", encoding="utf-8")


def bundled_pack_dirs(packs_dir: Path | None = None) -> list[Path]:
    return sorted(p.parent for p in (packs_dir or bundled_packs_dir()).glob("*/benchpack.toml"))


def current_entry(pack_dir: Path) -> tuple[str, str, str]:
    pack = load_pack(pack_dir)
    return pack.id, pack.version, content_hash(pack_dir)


def problems(packs_dir: Path | None = None) -> list[str]:
    """Every way the lock file and the bundled packs disagree, in words."""
    locked = read_lock(lock_path(packs_dir))
    found = []
    seen = set()
    for pack_dir in bundled_pack_dirs(packs_dir):
        pack_id, version, digest = current_entry(pack_dir)
        seen.add(pack_id)
        if pack_id not in locked:
            found.append(f"{pack_id} {version}: no line in {LOCK_NAME}; add it with "
                         f"`uv run python -m benchpack.packs.lock --update {pack_id}`")
            continue
        locked_version, locked_digest = locked[pack_id]
        if digest != locked_digest and version == locked_version:
            found.append(f"{pack_id} {version}: its content changed but its version did not; bump the version in "
                         f"{pack_dir.name}/benchpack.toml, then run `uv run python -m benchpack.packs.lock --update "
                         f"{pack_id}`")
        elif version != locked_version:
            change = "and its content changed" if digest != locked_digest else "but its content did not change"
            found.append(f"{pack_id}: version {locked_version} -> {version} {change}; refresh its line with "
                         f"`uv run python -m benchpack.packs.lock --update {pack_id}`")
    for pack_id in sorted(set(locked) - seen):
        found.append(f"{pack_id}: listed in {LOCK_NAME} but not a bundled pack; remove its line")
    return found


def update(pack_ids: list[str], packs_dir: Path | None = None) -> list[str]:
    path = lock_path(packs_dir)
    entries = read_lock(path)
    dirs = {p.name: p for p in bundled_pack_dirs(packs_dir)}
    changed = []
    for pack_id in pack_ids:
        if pack_id not in dirs:
            raise SystemExit(f"benchpack.packs.lock: no bundled pack {pack_id!r}")
        _, version, digest = current_entry(dirs[pack_id])
        entries[pack_id] = (version, digest)
        changed.append(f"{pack_id} {version} {digest}")
    write_lock(path, entries)
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchpack.packs.lock", description=__doc__.split("\n\n")[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--check", action="store_true", help="report packs whose content and version disagree")
    group.add_argument("--update", nargs="+", metavar="PACK_ID", help="refresh these packs' lines")
    args = parser.parse_args(argv)
    if args.update:
        for line in update(args.update):
            print(line)
        return 0
    found = problems()
    for line in found:
        print(line, file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main())
