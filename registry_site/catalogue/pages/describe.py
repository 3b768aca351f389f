"""Run facts in words for the public pages: hardware and run metadata as fields, not dumps.

Privacy: hardware.json may hold a hostname, a kernel string and an OS build;
none of these say how fast a machine is and all of them help identify it.
The public side shows the hostname only when the submitter chose it as a
label (`host_label: true`, `benchpack run --host-label`) and never the kernel;
run metadata values that look like filesystem paths are hidden the same way.
"""

from __future__ import annotations

import re

from benchpack.measurement.stats import is_number

PATH_LIKE = re.compile(r"^(?:/|~/|[A-Za-z]:[\\/]|\\\\)|/(?:home|Users|root|tmp|var|opt)/")
OS_FAMILIES = {"darwin": "macOS", "linux": "Linux", "win32": "Windows", "cygwin": "Windows", "freebsd": "FreeBSD"}
HIDDEN = "(hidden: looks like a file path)"


def _gib(mb) -> str | None:
    if not is_number(mb) or mb <= 0:
        return None
    gib = mb / 1024
    return f"{gib:.0f} GiB" if gib >= 10 else f"{gib:.1f} GiB"


def gpus_in_words(gpus) -> str | None:
    """"2 × NVIDIA GeForce RTX 4090 (24 GiB each)"; identical GPUs are counted, not repeated."""
    if not isinstance(gpus, list) or not gpus:
        return None
    counted: dict[tuple, int] = {}
    for gpu in gpus:
        if isinstance(gpu, dict):
            key = (str(gpu.get("model") or "unknown GPU"), _gib(gpu.get("vram_mb")))
        else:
            key = (str(gpu), None)
        counted[key] = counted.get(key, 0) + 1
    parts = []
    for (model, vram), count in counted.items():
        memory = f" ({vram}{' each' if count > 1 else ''})" if vram else ""
        parts.append(f"{count} × {model}{memory}" if count > 1 else f"{model}{memory}")
    return ", ".join(parts)


def hardware_in_words(hardware) -> list[tuple[str, str]]:
    """(label, text) pairs: CPU, cores, GPU × count + VRAM, RAM, OS family; host only when opted in."""
    if not isinstance(hardware, dict):
        return []
    facts = []
    chip, cpu = hardware.get("chip"), hardware.get("cpu_model")
    if chip:
        facts.append(("Chip", str(chip)))
    elif cpu:
        facts.append(("CPU", str(cpu)))
    if is_number(hardware.get("cpu_count")):
        facts.append(("CPU cores", str(int(hardware["cpu_count"]))))
    gpus = gpus_in_words(hardware.get("gpus"))
    if gpus and not (chip and all(isinstance(g, dict) and g.get("model") == chip for g in hardware["gpus"])):
        facts.append(("GPU", gpus))
    elif chip:
        facts.append(("GPU", f"integrated in the {chip} (shares RAM)"))
    if _gib(hardware.get("ram_mb")):
        facts.append(("RAM", _gib(hardware.get("ram_mb"))))
    family = OS_FAMILIES.get(str(hardware.get("platform") or ""), None)
    if family:
        facts.append(("OS", family))
    if hardware.get("host_label") is True and hardware.get("hostname"):
        facts.append(("Host label", str(hardware["hostname"])))
    return facts


# Sections of run-metadata.json that a page shows in their own form: the lanes (per-level tables and
# charts, submissions/_lanes.html), not as hundreds of "lanes.levels[3].energy…" fields.
SHOWN_ELSEWHERE = ("lanes",)


def metadata_fields(metadata, prefix: str = "") -> list[tuple[str, str]]:
    """Nested run metadata as ("runtime.version", "b6123") pairs in the file's order."""
    if not isinstance(metadata, dict):
        return []
    fields = []
    for key, value in metadata.items():
        if not prefix and key in SHOWN_ELSEWHERE:
            continue
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            fields += metadata_fields(value, f"{name}.")
        elif isinstance(value, list):
            if all(not isinstance(v, (dict, list)) for v in value):
                fields.append((name, _text(", ".join(_plain(v) for v in value))))
            else:
                for index, item in enumerate(value, start=1):
                    fields += metadata_fields(item, f"{name}[{index}].") if isinstance(item, dict) else [
                        (f"{name}[{index}]", _text(_plain(item)))]
        else:
            fields.append((name, _text(_plain(value))))
    return fields


def _plain(value) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def _text(text: str) -> str:
    return HIDDEN if PATH_LIKE.search(text) else text
