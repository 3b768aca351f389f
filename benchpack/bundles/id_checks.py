"""The "ids" bundle check: every identifier the registry stores and routes is in its grammar (benchpack.ids).

A row's pack id, case id and model id, and run-metadata.json's runtime.name,
are stored by the registry and become URL segments; a value outside the
grammar (a case id with `/`, an empty model) would be stored and then break
every page that links it. The check reads each run.jsonl once with a
three-field decoder, validates each distinct value once, and names the first
line of each bad value.
"""

from __future__ import annotations

import json
from typing import Iterator

import msgspec

from benchpack import ids
from benchpack.bundles.checks import BundleContext, Finding, check


class _PackRef(msgspec.Struct, gc=False):
    id: object = None


class _RowIds(msgspec.Struct, gc=False):
    pack: _PackRef = msgspec.field(default_factory=_PackRef)
    case: object = None
    model: object = None


_DECODER = msgspec.json.Decoder(_RowIds)
# (row field, grammar kind, how the value is read from the decoded row)
_FIELDS = (("pack.id", "pack id", lambda r: r.pack.id), ("case", "case id", lambda r: r.case),
           ("model", "model id", lambda r: r.model))


def _row_ids(line: bytes) -> _RowIds | None:
    try:
        return _DECODER.decode(line)
    except msgspec.DecodeError:
        return None  # the "rows" check has already said what is wrong with this line


@check("ids", needs=("rows",), description="pack, case and model ids and the runtime name are in the identifier grammar (docs/format.md)")
def check_ids(ctx: BundleContext) -> Iterator[Finding]:
    for listed in ctx.files_with_role("run"):
        verdicts: dict[tuple[str, object], str | None] = {}  # (kind, value) -> problem, each value checked once
        for number, line in enumerate(ctx.read(listed.path).split(b"\n"), start=1):
            if not line.strip():
                continue
            row = _row_ids(line)
            if row is None:
                continue
            for name, kind, read in _FIELDS:
                value = read(row)
                key = (kind, value if isinstance(value, (str, type(None))) else repr(value))
                if key in verdicts:
                    continue  # reported (with its first line) or valid
                verdicts[key] = ids.problem(kind, value)
                if verdicts[key] is not None:
                    yield Finding(f"row.{kind.replace(' ', '-')}", f"{name}: {verdicts[key]}", listed.path, number)
    for listed in ctx.files_with_role("run-metadata"):
        try:
            metadata = json.loads(ctx.text(listed.path) or "")
        except ValueError:
            continue  # the "metadata" check reports it
        runtime = metadata.get("runtime") if isinstance(metadata, dict) else None
        name = runtime.get("name") if isinstance(runtime, dict) else None
        if name is not None:
            reason = ids.problem("runtime name", name)
            if reason is not None:
                yield Finding("metadata.runtime-name", f"runtime.name: {reason}", listed.path)
