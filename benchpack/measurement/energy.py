"""Energy per request: joules from the machine's own counters, or null with the reason.

    meter = EnergyMeter.discover()      # once per run
    window = meter.start()              # just before the request
    ...                                 # the request (its timed window)
    row["energy"] = window.stop()       # just after it

Sources, each found only when the machine exposes it:

* `rapl` — Linux powercap (`/sys/class/powercap/*/energy_uj`): CPU package
  and DRAM energy counters (Intel, and AMD Zen through the same interface),
  read at start and stop; a counter that wrapped in between is unwrapped
  with its `max_energy_range_uj`. Since Linux 5.10 only root may read them.
* `nvml` — NVIDIA GPUs through `nvidia-ml-py` (the optional `nvidia`
  extra; imported only if installed): each device's total-energy counter
  (`nvmlDeviceGetTotalEnergyConsumption`, mJ, Volta and newer).
* `amdsmi` — AMD GPUs through ROCm's `amdsmi` when installed: each device's
  energy accumulator times its counter resolution.
* `powermetrics` — macOS, when this process may run it (root, or `sudo -n`
  allowed for it): CPU, GPU and ANE energy per sample, summed over the
  samples taken during the window (a sampler of its own, in its own process).

Counters are read only at start and stop: nothing samples inside the
client process while a request is on the wire (a sampling thread would
take the GIL from the reader; docs/measurement.md). A GPU without an energy
counter is reported null with that reason rather than estimated from power
readings.

The row field (`energy`), defined in docs/measurement.md:

    {"joules": 41.2 | null, "scope": ["rapl:package-0", "nvml:0"], "window_s": 1.93,
     "readings": [{"source", "domain", "joules", "method", "interval_s", "counted", "null_reason"}, ...],
     "unavailable": [{"source", "reason"}, ...], "null_reason": null | "..."}

`joules` is the sum of the counted readings and covers exactly `scope`;
readings that overlap a counted one (RAPL `core`/`uncore` inside a package,
`psys` around it) are listed with `counted: false`.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

# msgspec.Struct, not @dataclass: a dataclass compiles its generated methods from source text in every
# process (~0.4 ms a class); a Struct is built in C (docs/measurement.md, "Issue 34 item 2: stop 43").
import msgspec

# subprocess and signal drive powermetrics (macOS only), imported where it is used: not on every
# run's import path (subprocess imports signal, whose enums cost more than this module).
if TYPE_CHECKING:
    import subprocess

perf_counter = time.perf_counter

POWERCAP = Path("/sys/class/powercap")
RAPL_UPDATE_S = 0.001  # the hardware updates RAPL energy status about once a millisecond (Intel SDM vol. 3B, 15.10.3)
POWERMETRICS_INTERVAL_MS = 100


class Reading(msgspec.Struct):
    """One domain over one window."""

    source: str
    domain: str
    joules: float | None
    method: str  # "counter": read at start and stop; "sampled": summed samples
    interval_s: float | None  # the counter's update interval or the sampling interval, when known
    counted: bool = True  # part of the total (False: overlaps a counted domain)
    null_reason: str | None = None


class Source(Protocol):
    name: str

    def begin(self) -> Any: ...
    def end(self, began: Any, window_s: float) -> list[Reading]: ...
    def close(self) -> None: ...


# ---- Linux RAPL ------------------------------------------------------------

class _Zone(msgspec.Struct, frozen=True):
    path: Path
    domain: str
    max_range_uj: int | None
    counted: bool


def _read_int(path: Path) -> int:
    return int(path.read_text().strip())


def rapl_zones(root: Path = POWERCAP) -> list[_Zone]:
    """Every RAPL zone under `root` with an energy counter (top-level packages and DRAM are counted)."""
    zones = []
    for path in sorted(root.glob("intel-rapl*:*")):
        if not (path / "energy_uj").exists():
            continue
        name = (path / "name").read_text().strip() if (path / "name").exists() else path.name
        try:
            max_range = _read_int(path / "max_energy_range_uj")
        except (OSError, ValueError):
            max_range = None
        depth = path.name.count(":")
        # A package zone (depth 1) holds its core/uncore subzones; DRAM and
        # psys sit beside or around it. Count packages and DRAM only. The
        # MMIO interface some Intel laptops add reports the same package again.
        mmio = path.name.startswith("intel-rapl-mmio")
        counted = not mmio and ((depth == 1 and name.startswith("package")) or name == "dram")
        domain = name if depth == 1 else f"{name}-{path.name.split(':', 1)[1]}"
        domain = f"mmio-{domain}" if mmio else domain
        zones.append(_Zone(path, domain, max_range, counted))
    return zones


class RaplSource:
    name = "rapl"

    def __init__(self, zones: list[_Zone]) -> None:
        self.zones = zones

    @classmethod
    def discover(cls, root: Path | None = None) -> tuple[RaplSource | None, str | None]:
        root = POWERCAP if root is None else root
        if not root.is_dir():
            return None, f"no powercap interface ({root} does not exist)"
        zones = rapl_zones(root)
        if not zones:
            return None, f"no RAPL zone with an energy counter under {root}"
        try:
            _read_int(zones[0].path / "energy_uj")
        except PermissionError:
            return None, f"{zones[0].path / 'energy_uj'} is readable only by root (since Linux 5.10)"
        except (OSError, ValueError) as exc:
            return None, f"cannot read {zones[0].path / 'energy_uj'}: {exc}"
        return cls(zones), None

    def begin(self) -> list[int | None]:
        return [self._counter(zone) for zone in self.zones]

    @staticmethod
    def _counter(zone: _Zone) -> int | None:
        try:
            return _read_int(zone.path / "energy_uj")
        except (OSError, ValueError):
            return None

    def end(self, began: list[int | None], window_s: float) -> list[Reading]:
        readings = []
        for zone, start in zip(self.zones, began):
            stop = self._counter(zone)
            joules, reason = None, None
            if start is None or stop is None:
                reason = f"cannot read {zone.path / 'energy_uj'}"
            elif stop >= start:
                joules = (stop - start) / 1e6
            elif zone.max_range_uj:
                joules = (stop + zone.max_range_uj - start) / 1e6  # the counter wrapped once
            else:
                reason = "the counter went backwards and its range is unknown"
            if joules is not None and zone.max_range_uj and window_s > wrap_time_s(zone):
                joules, reason = None, "the window is longer than the counter takes to wrap at full power"
            readings.append(Reading("rapl", zone.domain, joules, "counter", RAPL_UPDATE_S, zone.counted, reason))
        return readings

    def close(self) -> None:
        pass


def wrap_time_s(zone: _Zone) -> float:
    """Shortest time the counter can take to wrap: its range at the zone's highest power limit (or 1 kW)."""
    max_uw = 0
    for limit in zone.path.glob("constraint_*_max_power_uw"):
        try:
            max_uw = max(max_uw, _read_int(limit))
        except (OSError, ValueError):
            pass
    watts = max_uw / 1e6 if max_uw > 0 else 1000.0
    return (zone.max_range_uj or 0) / 1e6 / watts


# ---- NVIDIA NVML -----------------------------------------------------------

class NvmlSource:
    name = "nvml"

    def __init__(self, nvml: Any, devices: list[tuple[str, Any]]) -> None:
        self.nvml = nvml
        self.devices = devices  # (domain, handle)

    @classmethod
    def discover(cls) -> tuple[NvmlSource | None, str | None]:
        try:
            import pynvml  # nvidia-ml-py
        except ImportError:
            return None, "nvidia-ml-py is not installed (pip install 'benchpack[nvidia]')"
        try:
            pynvml.nvmlInit()
        except Exception as exc:  # noqa: BLE001 - NVMLError_LibraryNotFound, DriverNotLoaded, ...
            return None, f"NVML did not start: {exc}"
        try:
            count = pynvml.nvmlDeviceGetCount()
            devices = []
            for index in range(count):
                handle = pynvml.nvmlDeviceGetHandleByIndex(index)
                devices.append((f"{index}", handle))
        except Exception as exc:  # noqa: BLE001
            pynvml.nvmlShutdown()
            return None, f"NVML could not list devices: {exc}"
        if not devices:
            pynvml.nvmlShutdown()
            return None, "NVML found no NVIDIA GPU"
        return cls(pynvml, devices), None

    def _counter(self, handle: Any) -> tuple[int | None, str | None]:
        try:
            return int(self.nvml.nvmlDeviceGetTotalEnergyConsumption(handle)), None
        except Exception as exc:  # noqa: BLE001 - NVMLError_NotSupported before Volta
            return None, f"no energy counter on this GPU ({exc})"

    def begin(self) -> list[tuple[int | None, str | None]]:
        return [self._counter(handle) for _, handle in self.devices]

    def end(self, began: list[tuple[int | None, str | None]], window_s: float) -> list[Reading]:
        readings = []
        for (domain, handle), (start, reason) in zip(self.devices, began):
            stop, stop_reason = self._counter(handle)
            joules = None
            if start is not None and stop is not None and stop >= start:
                joules = (stop - start) / 1e3  # mJ
            reason = reason or stop_reason or (None if joules is not None else "the counter went backwards")
            readings.append(Reading("nvml", domain, joules, "counter", None, True, reason))
        return readings

    def close(self) -> None:
        try:
            self.nvml.nvmlShutdown()
        except Exception:  # noqa: BLE001
            pass


# ---- AMD amdsmi ------------------------------------------------------------

class AmdsmiSource:
    name = "amdsmi"

    def __init__(self, amdsmi: Any, devices: list[tuple[str, Any]]) -> None:
        self.amdsmi = amdsmi
        self.devices = devices

    @classmethod
    def discover(cls) -> tuple[AmdsmiSource | None, str | None]:
        try:
            import amdsmi
        except ImportError:
            return None, "amdsmi is not installed (it comes with ROCm)"
        try:
            amdsmi.amdsmi_init()
            handles = amdsmi.amdsmi_get_processor_handles()
        except Exception as exc:  # noqa: BLE001
            return None, f"amdsmi did not start: {exc}"
        if not handles:
            amdsmi.amdsmi_shut_down()
            return None, "amdsmi found no AMD GPU"
        return cls(amdsmi, [(str(index), handle) for index, handle in enumerate(handles)]), None

    def _counter(self, handle: Any) -> tuple[float | None, str | None]:
        try:
            info = self.amdsmi.amdsmi_get_energy_count(handle)
            # ROCm 6.x names the accumulator `energy_accumulator`; earlier releases called it `power`.
            count = info.get("energy_accumulator", info.get("power"))
            return float(count) * float(info["counter_resolution"]), None  # µJ
        except Exception as exc:  # noqa: BLE001
            return None, f"no energy counter on this GPU ({exc})"

    def begin(self) -> list[tuple[float | None, str | None]]:
        return [self._counter(handle) for _, handle in self.devices]

    def end(self, began: list[tuple[float | None, str | None]], window_s: float) -> list[Reading]:
        readings = []
        for (domain, handle), (start, reason) in zip(self.devices, began):
            stop, stop_reason = self._counter(handle)
            joules = (stop - start) / 1e6 if start is not None and stop is not None and stop >= start else None
            reason = reason or stop_reason or (None if joules is not None else "the counter went backwards")
            readings.append(Reading("amdsmi", domain, joules, "counter", None, True, reason))
        return readings

    def close(self) -> None:
        try:
            self.amdsmi.amdsmi_shut_down()
        except Exception:  # noqa: BLE001
            pass


# ---- macOS powermetrics ----------------------------------------------------

POWERMETRICS_DOMAINS = (("cpu_energy", "cpu"), ("gpu_energy", "gpu"), ("ane_energy", "ane"))


def powermetrics_energy(output: bytes) -> tuple[dict[str, float], int]:
    """mJ per domain summed over every complete sample in powermetrics' `-f plist` output, and the sample count."""
    import plistlib  # macOS only: not on every run's import path

    totals: dict[str, float] = {}
    samples = 0
    for blob in output.split(b"\0"):
        blob = blob.strip()
        if not blob:
            continue
        try:
            sample = plistlib.loads(blob)
        except Exception:  # noqa: BLE001 - the last sample may be cut off by the stop
            continue
        processor = sample.get("processor") or {}
        samples += 1
        for key, domain in POWERMETRICS_DOMAINS:
            if isinstance(processor.get(key), (int, float)):
                totals[domain] = totals.get(domain, 0.0) + float(processor[key])
    return totals, samples


class PowermetricsSource:
    name = "powermetrics"

    def __init__(self, argv_prefix: list[str], interval_ms: int = POWERMETRICS_INTERVAL_MS) -> None:
        self.argv_prefix = argv_prefix
        self.interval_ms = interval_ms

    @classmethod
    def discover(cls) -> tuple[PowermetricsSource | None, str | None]:
        if sys.platform != "darwin":
            return None, "not macOS"
        binary = shutil.which("powermetrics") or "/usr/bin/powermetrics"
        if not os.path.exists(binary):
            return None, "powermetrics not found"
        if os.geteuid() == 0:
            return cls([binary]), None
        import subprocess

        check = subprocess.run(["sudo", "-n", "-l", binary], capture_output=True, check=False)
        if check.returncode == 0:
            return cls(["sudo", "-n", binary]), None
        return None, "powermetrics needs root: run as root or allow it in sudoers (NOPASSWD)"

    def begin(self) -> tuple[subprocess.Popen, Path]:
        import subprocess
        import tempfile  # macOS only: not on every run's import path

        handle, name = tempfile.mkstemp(prefix="benchpack-powermetrics-", suffix=".plist")
        os.close(handle)
        process = subprocess.Popen(
            [*self.argv_prefix, "--samplers", "cpu_power,gpu_power", "-i", str(self.interval_ms), "-f", "plist",
             "-o", name], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return process, Path(name)

    def end(self, began: tuple[subprocess.Popen, Path], window_s: float) -> list[Reading]:
        import signal
        import subprocess

        process, path = began
        process.send_signal(signal.SIGINT)  # powermetrics finishes the file on SIGINT
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        try:
            totals, samples = powermetrics_energy(path.read_bytes())
        except OSError:
            totals, samples = {}, 0
        finally:
            path.unlink(missing_ok=True)
        interval = self.interval_ms / 1e3
        readings = []
        for _, domain in POWERMETRICS_DOMAINS:
            if samples and domain in totals:
                readings.append(Reading("powermetrics", domain, totals[domain] / 1e3, "sampled", interval))
            else:
                reason = ("no complete sample: the request was shorter than the sampling interval" if not samples
                          else f"powermetrics reported no {domain} energy")
                readings.append(Reading("powermetrics", domain, None, "sampled", interval, True, reason))
        return readings

    def close(self) -> None:
        pass


# ---- the meter -------------------------------------------------------------

DISCOVERERS = (RaplSource.discover, NvmlSource.discover, AmdsmiSource.discover, PowermetricsSource.discover)
SOURCE_NAMES = ("rapl", "nvml", "amdsmi", "powermetrics")


class EnergyMeter:
    """The energy sources this machine exposes; `start()` opens a window around one request."""

    def __init__(self, sources: list[Any], unavailable: list[dict]) -> None:
        self.sources = sources
        self.unavailable = unavailable  # [{"source", "reason"}], for the row and the docs

    @classmethod
    def discover(cls) -> EnergyMeter:
        sources, unavailable = [], []
        for name, discover in zip(SOURCE_NAMES, DISCOVERERS):
            try:
                source, reason = discover()
            except Exception as exc:  # noqa: BLE001 - a probe must never fail a run
                source, reason = None, f"{type(exc).__name__}: {exc}"
            if source is not None:
                sources.append(source)
            else:
                unavailable.append({"source": name, "reason": reason})
        return cls(sources, unavailable)

    def start(self) -> EnergyWindow:
        return EnergyWindow(self)

    def close(self) -> None:
        for source in self.sources:
            source.close()


class EnergyWindow:
    def __init__(self, meter: EnergyMeter) -> None:
        self.meter = meter
        self.began = [source.begin() for source in meter.sources]
        self.start = perf_counter()

    def stop(self) -> dict:
        """The row's `energy` field for the window since start()."""
        window_s = perf_counter() - self.start
        readings: list[Reading] = []
        for source, began in zip(self.meter.sources, self.began):
            readings.extend(source.end(began, window_s))
        return energy_field(readings, self.meter.unavailable, window_s)


def energy_field(readings: list[Reading], unavailable: list[dict], window_s: float) -> dict:
    counted = [r for r in readings if r.counted]
    missing = [r for r in counted if r.joules is None]
    if not readings:
        reasons = "; ".join(f"{u['source']}: {u['reason']}" for u in unavailable)
        total, reason = None, f"no energy source on this machine ({reasons})"
    elif missing:
        total = None
        reason = "; ".join(f"{r.source}:{r.domain}: {r.null_reason}" for r in missing)
    else:
        total, reason = round(sum(r.joules for r in counted), 6), None  # type: ignore[misc]
    return {
        "joules": total,
        "scope": [f"{r.source}:{r.domain}" for r in counted],
        "window_s": round(window_s, 6),
        "readings": [msgspec.structs.asdict(r) for r in readings],  # flat: as dataclasses.asdict gave
        "unavailable": list(unavailable),
        "null_reason": reason,
    }


def tokens_per_joule(tokens: int | None, energy: dict | None) -> float | None:
    """Output tokens per joule for a row, or None when either is missing (never estimated)."""
    joules = (energy or {}).get("joules")
    if not isinstance(tokens, int) or not isinstance(joules, (int, float)) or joules <= 0:
        return None
    return round(tokens / joules, 4)
