import plistlib
import stat
import sys
import time
import types

import pytest

from benchpack.measurement import energy
from benchpack.measurement.energy import EnergyMeter, RaplSource, powermetrics_energy, tokens_per_joule


def zone(root, name, label, energy_uj, max_range=262143328850, max_power_uw=None):
    path = root / name
    path.mkdir(parents=True)
    (path / "name").write_text(label + "\n")
    (path / "energy_uj").write_text(f"{energy_uj}\n")
    (path / "max_energy_range_uj").write_text(f"{max_range}\n")
    if max_power_uw is not None:
        (path / "constraint_0_max_power_uw").write_text(f"{max_power_uw}\n")
    return path


@pytest.fixture
def powercap(tmp_path):
    root = tmp_path / "powercap"
    root.mkdir()
    return root


def set_uj(path, value):
    (path / "energy_uj").write_text(f"{value}\n")


def test_rapl_counts_packages_and_dram_and_lists_what_overlaps_them(powercap):
    pkg = zone(powercap, "intel-rapl:0", "package-0", 1_000_000)
    core = zone(powercap, "intel-rapl:0:0", "core", 500_000)
    dram = zone(powercap, "intel-rapl:0:1", "dram", 200_000)
    psys = zone(powercap, "intel-rapl:1", "psys", 9_000_000)
    mmio = zone(powercap, "intel-rapl-mmio:0", "package-0", 1_000_000)
    source, reason = RaplSource.discover(powercap)
    assert reason is None
    meter = EnergyMeter([source], [{"source": "nvml", "reason": "nvidia-ml-py is not installed"}])
    window = meter.start()
    set_uj(pkg, 3_500_000)
    set_uj(core, 2_000_000)
    set_uj(dram, 700_000)
    set_uj(psys, 13_000_000)
    set_uj(mmio, 3_500_000)
    field = window.stop()
    assert field["joules"] == pytest.approx(2.5 + 0.5)
    assert field["scope"] == ["rapl:package-0", "rapl:dram-0:1"]
    assert field["null_reason"] is None and field["window_s"] >= 0
    readings = {r["domain"]: r for r in field["readings"]}
    assert readings["core-0:0"]["joules"] == pytest.approx(1.5) and readings["core-0:0"]["counted"] is False
    assert readings["psys"]["counted"] is False and readings["mmio-package-0"]["counted"] is False
    assert readings["package-0"]["method"] == "counter" and readings["package-0"]["interval_s"] == 0.001
    assert field["unavailable"] == [{"source": "nvml", "reason": "nvidia-ml-py is not installed"}]


def test_rapl_unwraps_a_counter_that_wrapped_once(powercap):
    pkg = zone(powercap, "intel-rapl:0", "package-0", 262_143_000_000, max_range=262_143_328_850)
    source, _ = RaplSource.discover(powercap)
    window = EnergyMeter([source], []).start()
    set_uj(pkg, 671_150)  # passed the top: 328_850 µJ to the wrap, then 671_150 after it
    assert window.stop()["joules"] == pytest.approx(1.0)


def test_rapl_gives_null_with_a_reason_when_the_window_could_hide_a_second_wrap(powercap, monkeypatch):
    pkg = zone(powercap, "intel-rapl:0", "package-0", 100, max_range=1_000_000, max_power_uw=1_000_000)  # wraps in 1 s
    source, _ = RaplSource.discover(powercap)
    window = EnergyMeter([source], []).start()
    window.start -= 2.0  # a two-second request
    set_uj(pkg, 200)
    field = window.stop()
    assert field["joules"] is None
    assert "longer than the counter takes to wrap" in field["null_reason"]


def test_rapl_unreadable_by_this_user_is_a_reason_not_an_error(powercap, monkeypatch):
    zone(powercap, "intel-rapl:0", "package-0", 1)
    real = energy._read_int

    def denied(path):
        if path.name == "energy_uj":
            raise PermissionError(13, "Permission denied")
        return real(path)

    monkeypatch.setattr(energy, "_read_int", denied)
    source, reason = RaplSource.discover(powercap)
    assert source is None and "readable only by root" in reason
    assert RaplSource.discover(powercap.parent / "missing")[1].startswith("no powercap interface")


class FakeNvmlError(Exception):
    pass


def fake_nvml(counters):
    """A stand-in for nvidia-ml-py's pynvml: device i's counter (mJ) steps through counters[i]; None: not supported."""
    module = types.ModuleType("pynvml")
    state = {"init": 0, "shutdown": 0, "reads": [iter(c) if c is not None else None for c in counters]}

    module.nvmlInit = lambda: state.__setitem__("init", state["init"] + 1)
    module.nvmlShutdown = lambda: state.__setitem__("shutdown", state["shutdown"] + 1)
    module.nvmlDeviceGetCount = lambda: len(counters)
    module.nvmlDeviceGetHandleByIndex = lambda index: ("handle", index)

    def total_energy(handle):
        reads = state["reads"][handle[1]]
        if reads is None:
            raise FakeNvmlError("Not Supported")
        return next(reads)

    module.nvmlDeviceGetTotalEnergyConsumption = total_energy
    module.state = state
    return module


def test_nvml_reads_each_gpus_energy_counter(monkeypatch):
    nvml = fake_nvml([[10_000, 250_000], [5_000, 5_500]])
    monkeypatch.setitem(sys.modules, "pynvml", nvml)
    meter = EnergyMeter.discover()
    assert [s.name for s in meter.sources if s.name == "nvml"] == ["nvml"]
    meter.sources = [s for s in meter.sources if s.name == "nvml"]
    field = meter.start().stop()
    assert field["scope"] == ["nvml:0", "nvml:1"]
    assert field["joules"] == pytest.approx(240.0 + 0.5)
    meter.close()
    assert nvml.state["shutdown"] == 1


def test_a_gpu_without_an_energy_counter_makes_the_total_null_never_a_guess(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", fake_nvml([[0, 1_000], None]))
    source, reason = energy.NvmlSource.discover()
    field = EnergyMeter([source], []).start().stop()
    assert field["joules"] is None
    assert "nvml:1: no energy counter on this GPU (Not Supported)" in field["null_reason"]
    assert field["readings"][0]["joules"] == pytest.approx(1.0)


def test_nvml_missing_or_broken_is_a_reason(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import fails as if not installed
    assert "nvidia-ml-py is not installed" in energy.NvmlSource.discover()[1]
    broken = fake_nvml([])

    def no_driver():
        raise FakeNvmlError("Driver Not Loaded")

    broken.nvmlInit = no_driver
    monkeypatch.setitem(sys.modules, "pynvml", broken)
    assert energy.NvmlSource.discover() == (None, "NVML did not start: Driver Not Loaded")


def test_amdsmi_reads_the_accumulator_in_either_field_name(monkeypatch):
    module = types.ModuleType("amdsmi")
    reads = {0: iter([{"energy_accumulator": 1000, "counter_resolution": 15.3, "timestamp": 1},
                      {"energy_accumulator": 1_001_000, "counter_resolution": 15.3, "timestamp": 2}]),
             1: iter([{"power": 10, "counter_resolution": 1000.0}, {"power": 20, "counter_resolution": 1000.0}])}
    module.amdsmi_init = lambda: None
    module.amdsmi_shut_down = lambda: None
    module.amdsmi_get_processor_handles = lambda: [0, 1]
    module.amdsmi_get_energy_count = lambda handle: next(reads[handle])
    monkeypatch.setitem(sys.modules, "amdsmi", module)
    source, reason = energy.AmdsmiSource.discover()
    field = EnergyMeter([source], []).start().stop()
    assert field["joules"] == pytest.approx(1_000_000 * 15.3 / 1e6 + 10 * 1000 / 1e6)
    assert field["scope"] == ["amdsmi:0", "amdsmi:1"]


def sample(cpu_mj, gpu_mj, ane_mj=0.0):
    return plistlib.dumps({"elapsed_ns": 100_000_000,
                           "processor": {"cpu_energy": cpu_mj, "gpu_energy": gpu_mj, "ane_energy": ane_mj,
                                         "combined_power": 1234.0}})


def test_powermetrics_output_is_summed_per_domain_and_a_cut_off_sample_is_dropped():
    output = sample(120.0, 800.0) + b"\0" + sample(100.0, 700.0, 5.0) + b"\0" + sample(1, 1)[:40]
    assert powermetrics_energy(output) == ({"cpu": 220.0, "gpu": 1500.0, "ane": 5.0}, 2)


def test_powermetrics_runs_as_its_own_sampler_process(tmp_path):
    # A stand-in binary with powermetrics' arguments: writes plist samples to -o until SIGINT.
    fake = tmp_path / "powermetrics"
    fake.write_text(f"""#!{sys.executable}
import plistlib, signal, sys, time
out = sys.argv[sys.argv.index("-o") + 1]
def stop(*_):
    sys.exit(0)
signal.signal(signal.SIGINT, stop)
with open(out, "wb") as handle:
    for _ in range(3):
        handle.write(plistlib.dumps({{"processor": {{"cpu_energy": 50.0, "gpu_energy": 400.0, "ane_energy": 0.0}}}}) + b"\\0")
        handle.flush()
    while True:
        time.sleep(0.05)
""")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    source = energy.PowermetricsSource([str(fake)], interval_ms=100)
    window = EnergyMeter([source], []).start()
    time.sleep(0.3)
    field = window.stop()
    assert field["joules"] == pytest.approx(0.15 + 1.2)
    assert {r["domain"]: r["method"] for r in field["readings"]} == {"cpu": "sampled", "gpu": "sampled", "ane": "sampled"}
    assert field["readings"][0]["interval_s"] == 0.1
    assert not list(tmp_path.glob("benchpack-powermetrics-*"))


def test_a_machine_without_any_source_gives_null_with_every_reason(monkeypatch, tmp_path):
    monkeypatch.setattr(energy, "POWERCAP", tmp_path / "none")
    monkeypatch.setitem(sys.modules, "pynvml", None)
    monkeypatch.setitem(sys.modules, "amdsmi", None)
    meter = EnergyMeter.discover()
    field = meter.start().stop()
    assert field["joules"] is None and field["readings"] == [] and field["scope"] == []
    assert [u["source"] for u in field["unavailable"]] == ["rapl", "nvml", "amdsmi", "powermetrics"]
    assert field["null_reason"].startswith("no energy source on this machine (rapl: no powercap interface")


def test_tokens_per_joule_needs_both_figures():
    assert tokens_per_joule(100, {"joules": 4.0}) == 25.0
    assert tokens_per_joule(100, {"joules": None}) is None
    assert tokens_per_joule(None, {"joules": 4.0}) is None
    assert tokens_per_joule(100, None) is None
