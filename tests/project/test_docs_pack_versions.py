"""Every pack version the README and docs name is one that ships (issue 18: the README listed
`endpoint-python-correctness` 0.2.0 while `benchpack list` said 1.0.0)."""

from __future__ import annotations

import re
from pathlib import Path

from benchpack.packs import catalogue

REPO = Path(__file__).resolve().parents[2]
VERSIONS = catalogue.pack_versions()
NEWEST = {v.id: v.version for v in VERSIONS if v.newest}
BUNDLED = {(v.id, v.version) for v in VERSIONS}
IDS = "|".join(sorted(map(re.escape, NEWEST), key=len, reverse=True))
# `runtime-sweep` 1.1.0 · runtime-sweep 1.1.0 · runtime-sweep@1.0.0 · `runtime-sweep` version 1.0.0
MENTION = re.compile(rf"`?\b({IDS})\b`?(?:@| (?:version |v)?)`?(\d+\.\d+\.\d+)\b")


def seed_versions() -> set[tuple[str, str]]:
    return set(catalogue.seed_versions())


def documents() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), *sorted((REPO / "benchpacks").glob("*/README.md"))]


def table_under(path: Path, heading: str) -> list[str]:
    lines = path.read_text().splitlines()
    start = lines.index(heading)
    table = []
    for line in lines[start + 1:]:
        if line.startswith("#"):
            break
        if line.startswith("|"):
            table.append(line)
        elif table:
            break
    return table


def test_the_readme_table_of_bundled_packs_names_every_pack_at_the_version_that_ships():
    rows = table_under(REPO / "README.md", "## Bundled packs")
    named = {m.group(1): m.group(2) for row in rows for m in MENTION.finditer(row.split("|")[1])}
    assert named == NEWEST


def test_the_coding_packs_table_names_the_versions_that_ship():
    rows = table_under(REPO / "docs" / "coding-packs.md", "# Bundled coding packs")
    named = {m.group(1): m.group(2) for row in rows for m in MENTION.finditer(row.split("|")[1])}
    assert named and all(NEWEST[pack_id] == version for pack_id, version in named.items()), named


def test_every_pack_version_the_docs_name_is_bundled_or_the_seeds():
    """A version named anywhere is one `benchpack list --all` shows, or one the seed published (named
    when the docs explain why ours differs, benchpack/packs/seed_versions.txt)."""
    known = BUNDLED | seed_versions()
    unknown = [f"{path.relative_to(REPO)}:{n}: {m.group(1)} {m.group(2)}"
               for path in documents() for n, line in enumerate(path.read_text().splitlines(), 1)
               for m in MENTION.finditer(line) if (m.group(1), m.group(2)) not in known]
    assert unknown == []


def test_the_pattern_finds_the_forms_the_docs_use():
    found = [m.groups() for m in MENTION.finditer(
        "`runtime-sweep` 1.1.0, runtime-sweep@1.0.0, `smoke-chat` version 0.1.0, tool-json v0.1.0")]
    assert found == [("runtime-sweep", "1.1.0"), ("runtime-sweep", "1.0.0"), ("smoke-chat", "0.1.0"),
                     ("tool-json", "0.1.0")]
