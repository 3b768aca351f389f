"""`hardware.json`: what machine produced a run (D-005).

Every probe is best effort. A missing binary, a timeout, a permission error
or unparsable output gives `null` for that field; collecting hardware never
fails a run. Keys match the files written by the earlier implementation
(`hostname platform os kernel cpu_model cpu_count ram_mb gpus chip`).

`--host-label` replaces `hostname` and the real hostname is not recorded:
a label is what people use to keep a machine name out of bundles they share,
so writing the real name next to it would defeat the point.

GPUs: NVIDIA through `nvidia-smi`; Apple Silicon reports the chip as its GPU
with `vram_mb: null` (unified memory: the GPU shares `ram_mb`); Intel Macs
through `system_profiler`. Other GPUs (AMD, Intel on Linux) are not probed
and give an empty list.
"""

from __future__ import annotations

import json
import platform
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

import psutil

PROBE_TIMEOUT_S = 10.0
CPUINFO = Path("/proc/cpuinfo")


def _command_output(argv: list[str]) -> str | None:
    """stdout of a probe command, or None when it is missing or fails in any way."""
    if shutil.which(argv[0]) is None:
        return None
    try:
        completed = subprocess.run(
            argv, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    if completed.returncode != 0:
        return None
    return completed.stdout


def _safe(probe: Callable[[], Any]) -> Any:
    try:
        return probe()
    except Exception:  # a probe must never fail a run; null is the honest answer
        return None


def _hostname() -> str | None:
    return socket.gethostname() or None


def _ram_mb() -> int | None:
    return int(psutil.virtual_memory().total // (1024 * 1024))


def _cpu_count() -> int | None:
    return psutil.cpu_count(logical=True)


def linux_cpu_model(cpuinfo_text: str) -> str | None:
    """First `model name` (x86) or `Model`/`Hardware` (ARM boards) in /proc/cpuinfo."""
    fallbacks: dict[str, str] = {}
    for line in cpuinfo_text.splitlines():
        key, sep, value = line.partition(":")
        if not sep:
            continue
        key, value = key.strip().lower(), value.strip()
        if key == "model name" and value:
            return value
        if key in ("model", "hardware") and value and not value.isdigit():
            fallbacks.setdefault(key, value)
    return fallbacks.get("model") or fallbacks.get("hardware")


def nvidia_gpus(csv_text: str) -> list[dict]:
    """Parse `nvidia-smi --query-gpu=name,memory.total --format=csv,noheader,nounits`."""
    gpus = []
    for line in csv_text.strip().splitlines():
        name, _, memory = line.rpartition(",")
        if not name.strip():
            continue
        try:
            vram_mb: int | None = int(float(memory.strip()))
        except ValueError:
            vram_mb = None
        gpus.append({"model": name.strip(), "vram_mb": vram_mb})
    return gpus


def _darwin_displays(profiler_json: str) -> list[dict]:
    gpus = []
    for entry in json.loads(profiler_json).get("SPDisplaysDataType", []):
        model = entry.get("sppci_model") or entry.get("_name")
        if model:
            gpus.append({"model": model, "vram_mb": _vram_mb(entry)})
    return gpus


def _vram_mb(entry: dict) -> int | None:
    text = entry.get("spdisplays_vram") or entry.get("spdisplays_vram_shared") or ""
    number, _, unit = text.partition(" ")
    try:
        return int(float(number) * (1024 if unit.upper().startswith("GB") else 1))
    except ValueError:
        return None


def _probe_linux() -> dict:
    cpu_model = _safe(lambda: linux_cpu_model(CPUINFO.read_text(errors="replace")))
    smi = _command_output(
        ["nvidia-smi", "--query-gpu=name,memory.total", "--format=csv,noheader,nounits"]
    )
    gpus = _safe(lambda: nvidia_gpus(smi)) if smi else []
    return {"cpu_model": cpu_model, "gpus": gpus or [], "chip": None}


def _probe_darwin() -> dict:
    brand = _command_output(["sysctl", "-n", "machdep.cpu.brand_string"])
    brand = brand.strip() if brand and brand.strip() else None
    if brand and brand.startswith("Apple"):
        return {"cpu_model": brand, "gpus": [{"model": brand, "vram_mb": None}], "chip": brand}
    profiler = _command_output(["system_profiler", "SPDisplaysDataType", "-json"])
    gpus = _safe(lambda: _darwin_displays(profiler)) if profiler else []
    return {"cpu_model": brand, "gpus": gpus or [], "chip": None}


def collect_hardware(host_label: str | None = None) -> dict:
    """The `hardware.json` object for this machine; unknown values are None."""
    system = sys.platform
    probe = _probe_darwin if system == "darwin" else _probe_linux if system.startswith("linux") else dict
    specific = _safe(probe) or {}
    return {
        "hostname": host_label if host_label else _safe(_hostname),
        "platform": system,
        "os": _safe(platform.platform),
        "kernel": _safe(platform.release) or None,
        "cpu_model": specific.get("cpu_model"),
        "cpu_count": _safe(_cpu_count),
        "ram_mb": _safe(_ram_mb),
        "gpus": specific.get("gpus") or [],
        "chip": specific.get("chip"),
    }


def write_hardware(out: Path, hardware: dict) -> Path:
    path = Path(out) / "hardware.json"
    path.write_text(json.dumps(hardware, indent=2) + "\n", encoding="utf-8")
    return path
