"""An imported run → a result directory → a validated bundle labelled "imported from TOOL VERSION".

The result directory is made in a temporary folder and bundled with the same
`create_bundle` every Benchpack run goes through (same checks, same secret
scan); the bundle's manifest carries `source` and the `imported` check holds
every row and run-metadata.json to it. Nothing is written at `out` unless the
whole import and the bundle's validation succeeded.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from pathlib import Path

from benchpack.bundles.create import create_bundle
from benchpack.errors import ConfigError, Problem
from benchpack.interop.common import Imported, ImportRefused, Node, parse_json_text, read_bytes

VERSION_PATTERN = r"[0-9A-Za-z.+_-]{1,64}"


def system_metadata(imported: Imported, hardware: str | None, runtime: str | None, model: str | None) -> dict:
    """run-metadata.json of an imported run: what the user told us, and what nobody knows, said plainly."""
    unknown = list(imported.unknown)
    metadata: dict = {
        "imported": {
            "tool": imported.tool,
            "tool_version": imported.tool_version,
            "label": imported.label,
            "source_file": imported.source_name,
            "source_sha256": imported.source_sha256,
            "figures": imported.figures,
            "tool_figures": imported.tool_figures,
            "settings": imported.settings,
        },
        "notes": f"{imported.label}: measured by {imported.tool}, not by Benchpack; never ranked against "
                 "Benchpack-measured runs",
    }
    if runtime:
        name, _, version = runtime.partition(" ")
        metadata["runtime"] = {"name": name, **({"version": version} if version else {}), "source": "user"}
        unknown = [item for item in unknown if item != "runtime"]
    elif imported.runtime:
        metadata["runtime"] = {**imported.runtime, "source": imported.tool}
        unknown = [item for item in unknown if item != "runtime"]
    if hardware and not Path(hardware).is_file():
        metadata["imported"]["hardware_described"] = hardware
    if model or imported.model:
        metadata["model"] = {"name": model or imported.model, "source": "user" if model else imported.tool}
    metadata["imported"]["unknown"] = unknown
    return metadata


def _hardware_file(path: str) -> dict:
    data = read_bytes(Path(path))
    value = Node(path, parse_json_text(path, data))
    return value.obj().value


def write_bundle(imported: Imported, out: Path, *, hardware: str | None = None, runtime: str | None = None,
                 model: str | None = None, provenance: str = "self-reported") -> Path:
    out = Path(out)
    problems = []
    if out.exists() or out.is_symlink():
        problems.append(Problem(str(out), "", "already exists; choose a new bundle directory"))
    if runtime is not None and not runtime.strip():
        problems.append(Problem("--runtime", "", "must not be empty"))
    if imported.tool_version is not None and not re.fullmatch(VERSION_PATTERN, imported.tool_version):
        problems.append(Problem(imported.source_name, "version", "must be 1-64 letters, digits, '.', '+', '_' or '-'"))
    if problems:
        raise ConfigError(problems)
    hardware_json = _hardware_file(hardware) if hardware and Path(hardware).is_file() else None
    if not hardware_json:
        imported.unknown = imported.unknown if "hardware" in imported.unknown else ["hardware", *imported.unknown]
    else:
        imported.unknown = [item for item in imported.unknown if item != "hardware"]
    if model:
        imported.rows = [{**r, "model": model} for r in imported.rows]
    work = Path(tempfile.mkdtemp(prefix=".benchpack-import-"))
    try:
        label = f"imported-{imported.tool}-{imported.source_sha256[:12]}"
        run_dir = work / label
        run_dir.mkdir()
        with open(run_dir / "run.jsonl", "w", encoding="utf-8") as handle:
            for one in imported.rows:
                handle.write(json.dumps(one, allow_nan=False, separators=(",", ":")) + "\n")
        metadata = system_metadata(imported, hardware, runtime, model)
        (run_dir / "run-metadata.json").write_text(json.dumps(metadata, indent=2, allow_nan=False) + "\n",
                                                   encoding="utf-8")
        if hardware_json is not None:
            (run_dir / "hardware.json").write_text(json.dumps(hardware_json, indent=2) + "\n", encoding="utf-8")
        source = {"kind": "imported", "tool": imported.tool, "tool_version": imported.tool_version,
                  "label": imported.label, "file": Path(imported.source_name).name[:255],
                  "sha256": imported.source_sha256}
        return create_bundle([run_dir], out, provenance, source=source)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def import_file(tool: str, path: Path, out: Path, *, tool_version: str | None = None, hardware: str | None = None,
                runtime: str | None = None, model: str | None = None) -> tuple[Path, Imported]:
    """Read `path` as `tool`'s result file and write the bundle at `out`; ImportRefused names the bad field."""
    import importlib

    module = {"vllm": "vllm", "guidellm": "guidellm", "aiperf": "aiperf", "llama-bench": "llamabench"}[tool]
    parse = importlib.import_module(f"benchpack.interop.{module}").parse  # only the one reader this file needs
    if tool_version is not None and not re.fullmatch(VERSION_PATTERN, tool_version):
        raise ConfigError(Problem("--tool-version", "", "must be 1-64 letters, digits, '.', '+', '_' or '-'"))
    data = read_bytes(Path(path))
    imported = parse(str(path), data, tool_version)
    if not imported.rows:
        raise ImportRefused(Problem(str(path), "", "holds no requests to import"))
    return write_bundle(imported, out, hardware=hardware, runtime=runtime, model=model), imported
