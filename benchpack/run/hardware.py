"""`hardware.json`: what machine produced a run (D-005).

Every probe is best effort. A missing binary, a timeout, a permission error
or unparsable output gives `null` for that field; collecting hardware never
fails a run. The first keys match the files written by the earlier
implementation (`hostname platform os kernel cpu_model cpu_count ram_mb gpus
chip`); `gpu_probes` (what each GPU probe found, or why not) and
`host_label` (whether `hostname` is a label the user chose) follow.

`--host-label` replaces `hostname` and the real hostname is not recorded:
a label is what people use to keep a machine name out of bundles they share,
so writing the real name next to it would defeat the point. Bundles replace
a real hostname with an opaque label anyway (benchpack.bundles.create).

GPUs (docs/measurement.md, "Hardware"): NVIDIA through NVML
(`nvidia-ml-py`, when installed) or else `nvidia-smi`; AMD through
`rocm-smi`; macOS through `system_profiler` (Apple Silicon: the chip's GPU,
its core count, `vram_mb: null` because it shares `ram_mb`). Each GPU gives
vendor, model, VRAM, driver and compute capability, each null when its probe
cannot tell; the count is the length of `gpus`.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import socket
import sys
from pathlib import Path
from typing import Any, Callable

# psutil is imported only where the system calls below are missing: its import costs tens of
# milliseconds of CPU, a share of a short run's whole cost (docs/measurement.md, "The whole process's cost").

PROBE_TIMEOUT_S = 10.0
CPUINFO = Path("/proc/cpuinfo")


def _command_output(argv: list[str]) -> str | None:
    """stdout of a probe command, or None when it is missing or fails in any way."""
    if shutil.which(argv[0]) is None:
        return None
    import subprocess  # here, not at the top: where no probe tool is installed, a run never starts one

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
    # Physical pages × page size is the total psutil reports (Linux: /proc/meminfo's MemTotal, the same
    # kernel figure; macOS: hw.memsize); psutil only where sysconf cannot say.
    if "SC_PHYS_PAGES" in os.sysconf_names and "SC_PAGE_SIZE" in os.sysconf_names:
        return int(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // (1024 * 1024))
    import psutil

    return int(psutil.virtual_memory().total // (1024 * 1024))


def _cpu_count() -> int | None:
    # The logical CPUs online: what psutil.cpu_count(logical=True) reads on Linux and macOS too.
    return os.cpu_count()


def _os_text() -> str:
    """platform.platform(), without the `uname -p` process it starts on Linux.

    On Linux platform.platform() is system-release-machine-processor-with-libc, where the processor
    comes from `uname -p` and is left out when it is `unknown` or equals the machine — what GNU
    uname prints on Linux. Starting that process is a cost of every run (its CPU is the run's:
    wait4 counts children), so on Linux the string is formed here from os.uname() and libc_ver().
    """
    if not sys.platform.startswith("linux"):
        return platform.platform()
    uname = os.uname()
    libc, version = platform.libc_ver()
    parts = (uname.sysname, uname.release, uname.machine, "with", libc + version)
    text = "-".join(part.strip() for part in parts if part)
    for char, replacement in ((" ", "_"), ("/", "-"), ("\\", "-"), (":", "-"), (";", "-"), ('"', "-"), ("(", "-"),
                              (")", "-")):
        text = text.replace(char, replacement)
    text = text.replace("unknown", "")
    while "--" in text:
        text = text.replace("--", "-")
    return text.rstrip("-")


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


# ---- GPUs ----------------------------------------------------------------
#
# Each entry of `gpus`: {vendor, model, vram_mb, driver, compute_capability,
# source} plus `cores` where the system says (Apple). `compute_capability`
# is CUDA's major.minor for NVIDIA, the GFX target (gfx1100) for AMD, and
# the Metal family (metal3) for Apple. Any field the probe could not read is
# null; `gpu_probes` says for every probe tried what it found or why not.
# The GPU count is len(gpus): the hardware class keys on model and count.

NVIDIA_SMI_FIELDS = "name,memory.total,driver_version,compute_cap"


def _gpu(vendor: str, model: str, vram_mb: int | None, driver: str | None, compute_capability: str | None,
         source: str, **extra: Any) -> dict:
    return {"vendor": vendor, "model": model, "vram_mb": vram_mb, "driver": driver,
            "compute_capability": compute_capability, "source": source, **extra}


def _number(text: str) -> int | None:
    try:
        return int(float(text.strip()))
    except ValueError:
        return None


def nvidia_gpus(csv_text: str, fields: str = NVIDIA_SMI_FIELDS) -> list[dict]:
    """Parse `nvidia-smi --query-gpu=<fields> --format=csv,noheader,nounits` (fields as NVIDIA_SMI_FIELDS, or without compute_cap)."""
    names = fields.split(",")
    gpus = []
    for line in csv_text.strip().splitlines():
        # The name may itself hold commas; every other field cannot.
        parts = line.rsplit(",", len(names) - 1)
        if len(parts) != len(names) or not parts[0].strip():
            continue
        values = dict(zip(names, (part.strip() for part in parts)))
        known = {k: (None if v in ("", "[N/A]", "N/A", "[Not Supported]") else v) for k, v in values.items()}
        gpus.append(_gpu("nvidia", values["name"], _number(values["memory.total"]), known.get("driver_version"),
                         known.get("compute_cap"), "nvidia-smi"))
    return gpus


def _nvml_gpus() -> tuple[list[dict] | None, str]:
    try:
        import pynvml  # nvidia-ml-py, the optional `nvidia` extra
    except ImportError:
        return None, "nvidia-ml-py is not installed"
    try:
        pynvml.nvmlInit()
    except Exception as exc:  # noqa: BLE001 - NVMLError_LibraryNotFound, DriverNotLoaded, ...
        return None, f"NVML did not start: {exc}"
    try:
        driver = _safe(lambda: _text(pynvml.nvmlSystemGetDriverVersion()))
        gpus = []
        for index in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            memory = _safe(lambda h=handle: pynvml.nvmlDeviceGetMemoryInfo(h).total // (1024 * 1024))
            capability = _safe(lambda h=handle: "%d.%d" % tuple(pynvml.nvmlDeviceGetCudaComputeCapability(h)))
            gpus.append(_gpu("nvidia", _text(pynvml.nvmlDeviceGetName(handle)), memory, driver, capability, "nvml"))
        return gpus, f"{len(gpus)} GPU(s)"
    except Exception as exc:  # noqa: BLE001
        return None, f"NVML could not read the devices: {exc}"
    finally:
        _safe(pynvml.nvmlShutdown)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _nvidia_smi_gpus() -> tuple[list[dict] | None, str]:
    if shutil.which("nvidia-smi") is None:
        return None, "nvidia-smi not found"
    for fields in (NVIDIA_SMI_FIELDS, NVIDIA_SMI_FIELDS.rsplit(",", 1)[0]):  # drivers before ~510 lack compute_cap
        out = _command_output(["nvidia-smi", f"--query-gpu={fields}", "--format=csv,noheader,nounits"])
        if out is not None:
            gpus = nvidia_gpus(out, fields)
            return gpus, f"{len(gpus)} GPU(s)" + ("" if "compute_cap" in fields else "; this driver cannot report compute_cap")
    return None, "nvidia-smi failed"


def rocm_gpus(json_text: str) -> list[dict]:
    """Parse `rocm-smi --showproductname --showmeminfo vram --showdriverversion --json`."""
    data = json.loads(json_text)
    driver = None
    for key, value in data.items():
        if key.lower() == "system" and isinstance(value, dict):
            driver = value.get("Driver version") or value.get("Driver Version")
    gpus = []
    for key in sorted((k for k in data if k.lower().startswith("card")), key=lambda k: _number(k[4:]) or 0):
        card = data[key]
        if not isinstance(card, dict):
            continue
        model = card.get("Card Series") or card.get("Card series") or card.get("Card Model") or card.get("Card model")
        vram = card.get("VRAM Total Memory (B)")
        vram_mb = _number(str(vram)) // (1024 * 1024) if vram is not None and _number(str(vram)) else None
        gfx = card.get("GFX Version") or card.get("GFX version")
        gpus.append(_gpu("amd", str(model or key), vram_mb, driver or card.get("Driver version"),
                         str(gfx) if gfx else None, "rocm-smi"))
    return gpus


def _rocm_smi_gpus() -> tuple[list[dict] | None, str]:
    if shutil.which("rocm-smi") is None:
        return None, "rocm-smi not found"
    out = _command_output(["rocm-smi", "--showproductname", "--showmeminfo", "vram", "--showdriverversion", "--json"])
    if out is None:
        return None, "rocm-smi failed"
    gpus = rocm_gpus(out)
    return gpus, f"{len(gpus)} GPU(s)"


def darwin_gpus(profiler_json: str) -> list[dict]:
    """Parse `system_profiler SPDisplaysDataType -json`: model, cores, VRAM (null for unified memory), Metal family."""
    gpus = []
    for entry in json.loads(profiler_json).get("SPDisplaysDataType", []):
        model = entry.get("sppci_model") or entry.get("_name")
        if not model:
            continue
        metal = entry.get("spdisplays_mtlgpufamilysupport") or entry.get("spdisplays_metal")
        metal = metal.removeprefix("spdisplays_") if isinstance(metal, str) else None
        cores = _number(str(entry["sppci_cores"])) if entry.get("sppci_cores") else None
        vendor = "apple" if str(model).startswith("Apple") else str(entry.get("spdisplays_vendor", "")).removeprefix(
            "sppci_vendor_").lower() or None
        # Apple Silicon shares RAM with the GPU (unified memory): no VRAM figure of its own.
        gpus.append(_gpu(vendor, model, None if vendor == "apple" else _vram_mb(entry), None, metal,
                         "system_profiler", cores=cores))
    return gpus


def _vram_mb(entry: dict) -> int | None:
    text = entry.get("spdisplays_vram") or entry.get("spdisplays_vram_shared") or ""
    number, _, unit = text.partition(" ")
    try:
        return int(float(number) * (1024 if unit.upper().startswith("GB") else 1))
    except ValueError:
        return None


def _system_profiler_gpus() -> tuple[list[dict] | None, str]:
    out = _command_output(["system_profiler", "SPDisplaysDataType", "-json"])
    if out is None:
        return None, "system_profiler not found or failed"
    gpus = darwin_gpus(out)
    return gpus, f"{len(gpus)} GPU(s)"


def probe_gpus(probes: list[tuple[str, Callable[[], tuple[list[dict] | None, str]]]]) -> tuple[list[dict], list[dict]]:
    """Run `probes` in order; NVML answers for NVIDIA before nvidia-smi does. Returns (gpus, what every probe said)."""
    gpus: list[dict] = []
    said = []
    for name, probe in probes:
        if name == "nvidia-smi" and any(g["vendor"] == "nvidia" for g in gpus):
            said.append({"probe": name, "ok": False, "detail": "skipped: NVML already listed the NVIDIA GPUs"})
            continue
        try:
            found, detail = probe()
        except Exception as exc:  # noqa: BLE001 - a probe must never fail a run
            found, detail = None, f"{type(exc).__name__}: {exc}"
        said.append({"probe": name, "ok": found is not None, "detail": detail})
        gpus.extend(found or [])
    return gpus, said


LINUX_GPU_PROBES = [("nvml", _nvml_gpus), ("nvidia-smi", _nvidia_smi_gpus), ("rocm-smi", _rocm_smi_gpus)]


def _probe_linux() -> dict:
    cpu_model = _safe(lambda: linux_cpu_model(CPUINFO.read_text(errors="replace")))
    gpus, said = probe_gpus(LINUX_GPU_PROBES)
    return {"cpu_model": cpu_model, "gpus": gpus, "chip": None, "gpu_probes": said}


def _probe_darwin() -> dict:
    brand = _command_output(["sysctl", "-n", "machdep.cpu.brand_string"])
    brand = brand.strip() if brand and brand.strip() else None
    gpus, said = probe_gpus([("system_profiler", _system_profiler_gpus)])
    chip = brand if brand and brand.startswith("Apple") else None
    if chip and not gpus:  # system_profiler failed: the chip is still the GPU
        gpus = [_gpu("apple", chip, None, None, None, "sysctl", cores=None)]
    return {"cpu_model": brand, "gpus": gpus, "chip": chip, "gpu_probes": said}


def collect_hardware(host_label: str | None = None) -> dict:
    """The `hardware.json` object for this machine; unknown values are None."""
    system = sys.platform
    probe = _probe_darwin if system == "darwin" else _probe_linux if system.startswith("linux") else dict
    specific = _safe(probe) or {}
    return {
        "hostname": host_label if host_label else _safe(_hostname),
        "platform": system,
        "os": _safe(_os_text),
        "kernel": _safe(platform.release) or None,
        "cpu_model": specific.get("cpu_model"),
        "cpu_count": _safe(_cpu_count),
        "ram_mb": _safe(_ram_mb),
        "gpus": specific.get("gpus") or [],
        "chip": specific.get("chip"),
        "gpu_probes": specific.get("gpu_probes") or [],
        "host_label": bool(host_label),
    }


def write_hardware(out: Path, hardware: dict) -> Path:
    path = Path(out) / "hardware.json"
    path.write_text(json.dumps(hardware, indent=2) + "\n", encoding="utf-8")
    return path
