"""Every bundled pack version, and which one `benchpack run ID[@VERSION]` means.

A published result names its pack by id and version, so a version, once
released, stays runnable: the newest version of a pack lives in
`benchpacks/<id>/` (where it always has), each older released version in
`benchpacks/previous/<id>/<version>/`, unchanged (docs/packs.md, "Older
versions"). `ID` is the newest version, `ID@VERSION` any of them.

Listing reads each manifest's `[pack]` table and case kinds with tomllib
only, not the full loader, so `benchpack list` answers at once
(docs/cli-startup.md); `benchpack validate` and `run` load the pack fully.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

MANIFEST_NAME = "benchpack.toml"
PREVIOUS_DIR = "previous"
# The id+versions the seed implementation published (seed_versions.txt): a
# result may name one, so `run ID@VERSION` says what it is rather than only
# "no such version" (docs/packs.md, "What is bundled, and what is not").
SEED_VERSIONS_FILE = Path(__file__).with_name("seed_versions.txt")
SEED_VERDICTS = ("same", "differs", "unknown")


@dataclass(frozen=True)
class PackVersion:
    id: str
    version: str
    description: str
    case_kinds: tuple[str, ...]  # one per case, in manifest order
    path: Path  # the pack directory
    newest: bool


def bundled_packs_dir() -> Path:
    return Path(__file__).resolve().parents[2] / "benchpacks"


def version_key(version: str) -> tuple:
    """Order "1.10.0" after "1.9.0": numeric parts as numbers, the rest as text."""
    return tuple((0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"[.+-]", version))


def _read(manifest: Path, newest: bool) -> PackVersion | None:
    try:
        data = tomllib.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None  # an unreadable bundled manifest is `benchpack validate`'s to report, not list's
    pack = data.get("pack") if isinstance(data.get("pack"), dict) else {}
    cases = data.get("cases") if isinstance(data.get("cases"), list) else []
    kinds = tuple(str(c.get("kind", "chat")) for c in cases if isinstance(c, dict))
    return PackVersion(id=str(pack.get("id", manifest.parent.name)), version=str(pack.get("version", "?")),
                       description=str(pack.get("description", "")), case_kinds=kinds, path=manifest.parent,
                       newest=newest)


def pack_versions(packs_dir: Path | None = None) -> list[PackVersion]:
    """Every bundled version, by id, newest first."""
    root = packs_dir or bundled_packs_dir()
    found = [_read(m, True) for m in root.glob(f"*/{MANIFEST_NAME}")]
    found += [_read(m, False) for m in (root / PREVIOUS_DIR).glob(f"*/*/{MANIFEST_NAME}")]
    versions = [v for v in found if v is not None]
    return sorted(versions, key=lambda v: (v.id, _neg(version_key(v.version))))


def _neg(key: tuple) -> tuple:
    # newest first within an id: invert the numeric parts, keep text parts ascending
    return tuple((kind, -number, text) for kind, number, text in key)


def newest_versions(packs_dir: Path | None = None) -> list[PackVersion]:
    return [v for v in pack_versions(packs_dir) if v.newest]


def find(pack_id: str, version: str | None = None, packs_dir: Path | None = None) -> PackVersion | None:
    """`ID` → the newest version (the one in benchpacks/<id>/); `ID@VERSION` → that version."""
    for entry in pack_versions(packs_dir):
        if entry.id == pack_id and (entry.version == version if version is not None else entry.newest):
            return entry
    return None


def versions_of(pack_id: str, packs_dir: Path | None = None) -> list[str]:
    return [v.version for v in pack_versions(packs_dir) if v.id == pack_id]


def seed_versions(path: Path | None = None) -> dict[tuple[str, str], str]:
    """(pack id, version) -> verdict for each version the seed implementation published:
    `same` (bundled here, the seed's workload), `differs` (this repository once had another
    workload under that id+version) or `unknown` (the seed's content is nowhere to compare)."""
    source = path or SEED_VERSIONS_FILE
    entries: dict[tuple[str, str], str] = {}
    for number, line in enumerate(source.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split()
        if len(fields) != 3 or fields[2] not in SEED_VERDICTS:
            # A packaging fault, not user input: say where, never guess.
            raise ValueError(f"{source}:{number}: expected '<pack id> <version> {'|'.join(SEED_VERDICTS)}', "
                             f"got {line!r}")
        entries[(fields[0], fields[1])] = fields[2]
    return entries
