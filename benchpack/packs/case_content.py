"""What a pack definition says about one case: its content hash and request settings.

Result rows do not carry the case's prompt or the pack's request defaults, so
the workload key takes them from the pack definition when the pack is known:
a bundled pack whose version equals the row's (VERSIONS.lock forces a version
bump whenever a pack's files change, so the version pins the content).
Anything else stays unknown.

The case hash is sha256 over canonical JSON of the case as declared in the
manifest (prompt text or prompt file contents, fixture references, scoring),
plus the pack-level scoring it inherits; fixture file contents are covered by
the pack version for the reason above.
"""

from __future__ import annotations

import json
from functools import lru_cache

from benchpack.digest import sha256
from benchpack.errors import BenchpackError


def case_digest(pack, case) -> str:
    declared = {
        "case": case.raw,
        "prompt": case.prompt,
        "kind": case.kind,
        "fixture_refs": list(case.fixture_refs),
        "pack_scoring": getattr(pack.scoring, "raw", None) if pack.scoring else None,
    }
    if getattr(case, "tools", ()):  # what the case sends: the definitions it names (only then: older digests stay)
        declared["tools"] = list(case.tools)
    canonical = json.dumps(declared, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return sha256(canonical.encode("utf-8")).hexdigest()


def case_specs_of(pack) -> dict[str, dict]:
    defaults = pack.defaults
    return {
        case.id: {"case_sha256": case_digest(pack, case), "temperature": defaults.temperature,
                  "max_tokens": defaults.max_tokens, "stream": defaults.stream,
                  "_source": f"bundled {pack.id} {pack.version}"}
        for case in pack.cases
    }


@lru_cache(maxsize=64)
def bundled_case_specs(pack_id: str, version: str) -> dict[str, dict]:
    """{case id: spec} for a bundled pack of exactly this version (the newest or an older one kept in
    benchpacks/previous/); {} when there is none."""
    from benchpack.packs import catalogue
    from benchpack.packs.loader import load_pack

    if not pack_id or "/" in pack_id or not version:
        return {}
    entry = catalogue.find(str(pack_id), str(version))
    if entry is None:
        return {}
    try:
        pack = load_pack(entry.path)
    except BenchpackError:
        return {}
    if pack.version != version:
        return {}
    return case_specs_of(pack)


def case_spec(pack_id: str | None, version: str | None, case: str | None) -> dict | None:
    if not pack_id or not version or not case:
        return None
    return bundled_case_specs(str(pack_id), str(version)).get(str(case))
