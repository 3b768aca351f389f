"""A pack in words a visitor recognises (issue 32 item 5): a title and a kind of work beside its id.

A pack's manifest names it by id (`runtime-sweep`) and describes it in one line
(`[pack] description`); it has no title. A title written into
`benchpacks/<id>/benchpack.toml` would change the pack's digest and its entry in
VERSIONS.lock, and a result names the pack it ran by id and digest, so the words
live here, registry-side: one table, pack id -> (kind of work, title). The
description is read from the bundled manifest (benchpack.packs.catalogue), never
copied here. Every page and API object that names a pack to a visitor uses
`pack_words`; the id stays the link, the filter value and the API key.

`tests/service/test_pack_words.py` fails when a bundled pack has no title here.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from benchpack.packs import catalogue

# Kinds of work, in the words of someone choosing what to measure.
CHAT_SPEED = "Chat speed"
LONG_CONTEXT = "Long context"
TOOL_CALLING = "Tool calling"
SMOKE_TEST = "Smoke test"
FIX_FAILING_TEST = "Coding: fix a failing test"
FIX_BUG = "Coding: fix a bug from a report"
WRITE_TO_SPEC = "Coding: write code to a spec"
COMPLETE_MODULE = "Coding: complete a module"
PLAN_CHANGE = "Coding: plan a change"
AGENT_PROGRAM = "Coding agent: build a program"
IMPORTED = "Imported results"

# pack id -> (kind of work, title). The title says what this pack asks for, without repeating the kind.
TITLES: dict[str, tuple[str, str]] = {
    "runtime-sweep": (CHAT_SPEED, "Short, medium and long prompts"),
    "smoke-chat": (SMOKE_TEST, "One short question"),
    "coding-agent-load": (LONG_CONTEXT, "Coding-agent context depths, several agents at once"),
    "tool-calls": (TOOL_CALLING, "Native tool calls"),
    "tool-json": (TOOL_CALLING, "Tool calls as JSON text"),
    "patch-from-failure": (FIX_FAILING_TEST, "A bill split drops cents"),
    "python-regression-fix": (FIX_BUG, "Prerelease versions sort wrongly"),
    "django-dashboard-regression-fix": (FIX_BUG, "A Django dashboard over-counts orders"),
    "endpoint-python-correctness": (WRITE_TO_SPEC, "Python functions from their docstrings"),
    "mini-project-completion": (COMPLETE_MODULE, "A key-value store from its interface"),
    "desktop-django-wrap": (PLAN_CHANGE, "Wrap a Django app as a desktop app"),
    "product-offer-matching": (AGENT_PROGRAM, "Group noisy product offers into products"),
}

IMPORTED_PREFIX = "imported-"  # `benchpack import` names its bundles' pack `imported-<tool>` (benchpack.interop)


@dataclass(frozen=True)
class PackWords:
    id: str
    kind: str  # "" for a pack this registry has no words for (the id is all there is)
    title: str  # the id itself when there is no title
    description: str  # the bundled manifest's `[pack] description`; "" when not bundled

    @property
    def label(self) -> str:
        """"Chat speed · Short, medium and long prompts"; the id when the pack has no words here."""
        return f"{self.kind} · {self.title}" if self.kind else self.title


@functools.lru_cache(maxsize=1)
def _descriptions() -> dict[str, str]:
    # The bundled manifests do not change while the process runs; read them once.
    return {v.id: v.description for v in catalogue.newest_versions()}


def pack_words(pack_id: str) -> PackWords:
    if pack_id in TITLES:
        kind, title = TITLES[pack_id]
        return PackWords(pack_id, kind, title, _descriptions().get(pack_id, ""))
    if pack_id.startswith(IMPORTED_PREFIX) and len(pack_id) > len(IMPORTED_PREFIX):
        tool = pack_id[len(IMPORTED_PREFIX):]
        return PackWords(pack_id, IMPORTED, f"Measured by {tool}, not by Benchpack", "")
    return PackWords(pack_id, "", pack_id, _descriptions().get(pack_id, ""))
