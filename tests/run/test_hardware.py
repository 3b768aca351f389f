import json
import os
import stat
import sys
import types

import pytest

from benchpack.run import hardware
from benchpack.run.hardware import collect_hardware, darwin_gpus, linux_cpu_model, nvidia_gpus, rocm_gpus
from tests.environment import needs

REAL_KEYS = ["hostname", "platform", "os", "kernel", "cpu_model", "cpu_count", "ram_mb", "gpus", "chip"]
NEW_KEYS = ["gpu_probes", "host_label"]


def fake_binary(directory, name, script):
    path = directory / name
    path.write_text("#!/bin/sh\n" + script + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


@pytest.fixture
def bin_dir(tmp_path, monkeypatch):
    """A PATH holding only the fake probe binaries a test puts there, and no NVML module."""
    directory = tmp_path / "bin"
    directory.mkdir()
    monkeypatch.setenv("PATH", str(directory))
    monkeypatch.setitem(sys.modules, "pynvml", None)
    return directory


def test_it_writes_the_keys_of_the_real_hardware_files(tmp_path):
    data = collect_hardware()
    assert list(data) == REAL_KEYS + NEW_KEYS
    assert isinstance(data["cpu_count"], int) and data["ram_mb"] > 0
    hardware.write_hardware(tmp_path, data)
    assert json.loads((tmp_path / "hardware.json").read_text()) == data


def test_it_gives_nulls_when_every_probe_fails(bin_dir, tmp_path, monkeypatch):
    monkeypatch.setattr(hardware, "CPUINFO", tmp_path / "no-cpuinfo")

    def broken():
        raise OSError("no /proc")

    monkeypatch.setattr(hardware.os, "sysconf", broken)
    monkeypatch.setattr(hardware.os, "cpu_count", broken)
    monkeypatch.setattr(hardware.socket, "gethostname", broken)
    monkeypatch.setattr(hardware.os, "uname", broken)
    monkeypatch.setattr(hardware.platform, "platform", broken)
    data = collect_hardware()
    assert data["hostname"] is None and data["os"] is None
    assert (data["cpu_model"], data["cpu_count"], data["ram_mb"]) == (None, None, None)
    assert data["gpus"] == [] and data["chip"] is None


def test_it_reads_nvidia_gpus_from_nvidia_smi(bin_dir, monkeypatch):
    monkeypatch.setattr(hardware.sys, "platform", "linux")
    fake_binary(bin_dir, "nvidia-smi", 'echo "NVIDIA GeForce RTX 4090, 24564, 550.54.14, 8.9"; '
                                       'echo "NVIDIA A100-SXM4-80GB, 81920, 550.54.14, 8.0"')
    data = collect_hardware()
    assert data["gpus"] == [
        {"vendor": "nvidia", "model": "NVIDIA GeForce RTX 4090", "vram_mb": 24564, "driver": "550.54.14",
         "compute_capability": "8.9", "source": "nvidia-smi"},
        {"vendor": "nvidia", "model": "NVIDIA A100-SXM4-80GB", "vram_mb": 81920, "driver": "550.54.14",
         "compute_capability": "8.0", "source": "nvidia-smi"},
    ]
    probes = {p["probe"]: p for p in data["gpu_probes"]}
    assert probes["nvml"] == {"probe": "nvml", "ok": False, "detail": "nvidia-ml-py is not installed"}
    assert probes["nvidia-smi"]["ok"] and probes["rocm-smi"] == {"probe": "rocm-smi", "ok": False,
                                                                "detail": "rocm-smi not found"}


def test_an_old_nvidia_smi_without_compute_cap_still_gives_the_rest(bin_dir, monkeypatch):
    monkeypatch.setattr(hardware.sys, "platform", "linux")
    fake_binary(bin_dir, "nvidia-smi", 'case "$1" in *compute_cap*) echo \'Field "compute_cap" is not a valid field\' >&2; '
                                       'exit 2;; esac; echo "Tesla P100-PCIE-16GB, 16280, 470.82.01"')
    data = collect_hardware()
    assert data["gpus"] == [{"vendor": "nvidia", "model": "Tesla P100-PCIE-16GB", "vram_mb": 16280,
                             "driver": "470.82.01", "compute_capability": None, "source": "nvidia-smi"}]
    assert "cannot report compute_cap" in [p for p in data["gpu_probes"] if p["probe"] == "nvidia-smi"][0]["detail"]


def fake_pynvml(devices, driver=b"560.35.03"):
    module = types.ModuleType("pynvml")
    module.shutdowns = 0
    module.nvmlInit = lambda: None

    def shutdown():
        module.shutdowns += 1

    module.nvmlShutdown = shutdown
    module.nvmlSystemGetDriverVersion = lambda: driver
    module.nvmlDeviceGetCount = lambda: len(devices)
    module.nvmlDeviceGetHandleByIndex = lambda i: devices[i]
    module.nvmlDeviceGetName = lambda d: d["name"]
    module.nvmlDeviceGetMemoryInfo = lambda d: types.SimpleNamespace(total=d["bytes"])

    def capability(d):
        if d.get("cc") is None:
            raise RuntimeError("Not Supported")
        return d["cc"]

    module.nvmlDeviceGetCudaComputeCapability = capability
    return module


def test_nvml_answers_for_nvidia_gpus_before_nvidia_smi(bin_dir, monkeypatch):
    monkeypatch.setattr(hardware.sys, "platform", "linux")
    nvml = fake_pynvml([{"name": b"NVIDIA GeForce RTX 3090", "bytes": 24 * 1024**3, "cc": (8, 6)},
                        {"name": "NVIDIA GeForce RTX 3090", "bytes": 24 * 1024**3, "cc": None}])
    monkeypatch.setitem(sys.modules, "pynvml", nvml)
    fake_binary(bin_dir, "nvidia-smi", "echo should-not-be-used; exit 1")
    data = collect_hardware()
    assert [(g["model"], g["vram_mb"], g["driver"], g["compute_capability"], g["source"]) for g in data["gpus"]] == [
        ("NVIDIA GeForce RTX 3090", 24576, "560.35.03", "8.6", "nvml"),
        ("NVIDIA GeForce RTX 3090", 24576, "560.35.03", None, "nvml"),
    ]
    assert len(data["gpus"]) == 2  # the count a hardware class keys on
    assert data["gpu_probes"][1]["detail"].startswith("skipped")
    assert nvml.shutdowns == 1


ROCM_SMI = {
    "card0": {"Card Series": "Radeon RX 7900 XTX", "Card Model": "0x744c", "Card Vendor": "Advanced Micro Devices, Inc. [AMD/ATI]",
              "VRAM Total Memory (B)": "25753026560", "GFX Version": "gfx1100"},
    "card1": {"Card Series": "AMD Instinct MI210", "VRAM Total Memory (B)": "68702699520", "GFX Version": "gfx90a"},
    "system": {"Driver version": "6.7.0"},
}


def test_it_reads_amd_gpus_from_rocm_smi(bin_dir, monkeypatch):
    monkeypatch.setattr(hardware.sys, "platform", "linux")
    fake_binary(bin_dir, "rocm-smi", f"printf '%s\\n' '{json.dumps(ROCM_SMI)}'")
    assert collect_hardware()["gpus"] == [
        {"vendor": "amd", "model": "Radeon RX 7900 XTX", "vram_mb": 24560, "driver": "6.7.0",
         "compute_capability": "gfx1100", "source": "rocm-smi"},
        {"vendor": "amd", "model": "AMD Instinct MI210", "vram_mb": 65520, "driver": "6.7.0",
         "compute_capability": "gfx90a", "source": "rocm-smi"},
    ]


def test_garbled_probe_output_is_a_reason_not_an_error(bin_dir, monkeypatch):
    monkeypatch.setattr(hardware.sys, "platform", "linux")
    fake_binary(bin_dir, "rocm-smi", "echo 'WARNING: AMD GPU driver not loaded'")
    data = collect_hardware()
    assert data["gpus"] == []
    rocm = [p for p in data["gpu_probes"] if p["probe"] == "rocm-smi"][0]
    assert rocm["ok"] is False and rocm["detail"].startswith("JSONDecodeError")


def test_it_ignores_a_failing_nvidia_smi(bin_dir, monkeypatch):
    monkeypatch.setattr(hardware.sys, "platform", "linux")
    fake_binary(bin_dir, "nvidia-smi", 'echo "NVIDIA-SMI has failed" >&2; exit 9')
    data = collect_hardware()
    assert data["gpus"] == []
    assert {"probe": "nvidia-smi", "ok": False, "detail": "nvidia-smi failed"} in data["gpu_probes"]


APPLE_PROFILER = {"SPDisplaysDataType": [{"_name": "Apple M2 Max", "sppci_model": "Apple M2 Max", "sppci_cores": "38",
                                          "spdisplays_mtlgpufamilysupport": "spdisplays_metal3",
                                          "spdisplays_vendor": "sppci_vendor_Apple"}]}


def test_it_reports_apple_silicon_as_chip_and_gpu_with_its_cores(bin_dir, monkeypatch):
    monkeypatch.setattr(hardware.sys, "platform", "darwin")
    fake_binary(bin_dir, "sysctl", 'echo "Apple M2 Max"')
    fake_binary(bin_dir, "system_profiler", f"printf '%s\\n' '{json.dumps(APPLE_PROFILER)}'")
    data = collect_hardware()
    assert (data["platform"], data["cpu_model"], data["chip"]) == ("darwin", "Apple M2 Max", "Apple M2 Max")
    assert data["gpus"] == [{"vendor": "apple", "model": "Apple M2 Max", "vram_mb": None, "driver": None,
                             "compute_capability": "metal3", "source": "system_profiler", "cores": 38}]


def test_apple_silicon_without_system_profiler_still_names_the_chip_as_gpu(bin_dir, monkeypatch):
    monkeypatch.setattr(hardware.sys, "platform", "darwin")
    fake_binary(bin_dir, "sysctl", 'echo "Apple M5 Max"')
    data = collect_hardware()
    assert [g["model"] for g in data["gpus"]] == ["Apple M5 Max"]
    assert data["gpu_probes"] == [{"probe": "system_profiler", "ok": False,
                                   "detail": "system_profiler not found or failed"}]


def test_an_intel_mac_reports_its_discrete_gpu_vram():
    profiler = {"SPDisplaysDataType": [{"sppci_model": "AMD Radeon Pro 5500M", "spdisplays_vram": "8 GB",
                                        "spdisplays_vendor": "sppci_vendor_amd", "spdisplays_metal": "spdisplays_metal2"}]}
    assert darwin_gpus(json.dumps(profiler)) == [{"vendor": "amd", "model": "AMD Radeon Pro 5500M", "vram_mb": 8192,
                                                  "driver": None, "compute_capability": "metal2",
                                                  "source": "system_profiler", "cores": None}]


def test_survives_a_mac_without_sysctl_or_system_profiler(bin_dir, monkeypatch):
    monkeypatch.setattr(hardware.sys, "platform", "darwin")
    data = collect_hardware()
    assert (data["cpu_model"], data["chip"], data["gpus"]) == (None, None, [])


def test_it_uses_the_host_label_instead_of_the_hostname(monkeypatch):
    monkeypatch.setattr(hardware.socket, "gethostname", lambda: "secret-box.corp")
    data = collect_hardware(host_label="lab-gpu-1")
    assert data["hostname"] == "lab-gpu-1" and data["host_label"] is True
    assert collect_hardware()["host_label"] is False
    assert "secret-box" not in json.dumps(data)


def test_it_finds_the_cpu_model_in_proc_cpuinfo():
    x86 = "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel\t\t: 17\nmodel name\t: AMD EPYC 7763\n"
    arm = "processor\t: 0\nBogoMIPS\t: 108.00\n\nHardware\t: BCM2835\nModel\t\t: Raspberry Pi 5 Model B\n"
    assert linux_cpu_model(x86) == "AMD EPYC 7763"
    assert linux_cpu_model(arm) == "Raspberry Pi 5 Model B"
    assert linux_cpu_model("garbage") is None


def test_it_keeps_a_gpu_whose_memory_is_not_a_number_and_a_name_with_commas():
    assert nvidia_gpus("Tesla T4, [N/A], [N/A], 7.5\nNVIDIA RTX A6000, Ada, 48000, 550.1, 8.9\n\n") == [
        {"vendor": "nvidia", "model": "Tesla T4", "vram_mb": None, "driver": None, "compute_capability": "7.5",
         "source": "nvidia-smi"},
        {"vendor": "nvidia", "model": "NVIDIA RTX A6000, Ada", "vram_mb": 48000, "driver": "550.1",
         "compute_capability": "8.9", "source": "nvidia-smi"}]


def test_rocm_smi_cards_sort_by_number():
    data = {f"card{i}": {"Card Series": f"GPU {i}", "GFX Version": "gfx942"} for i in (10, 2, 1)}
    assert [g["model"] for g in rocm_gpus(json.dumps(data))] == ["GPU 1", "GPU 2", "GPU 10"]


def test_ram_and_cpu_count_are_what_psutil_says_without_importing_it():
    import psutil  # a dependency of the project (process-tree cleanup), not of hardware.json any more
    assert hardware._ram_mb() == psutil.virtual_memory().total // (1024 * 1024)
    assert hardware._cpu_count() == psutil.cpu_count(logical=True)


@needs(sys.platform.startswith("linux"), "the Linux form of platform.platform()")
def test_the_os_string_is_platform_platform_without_starting_uname(monkeypatch):
    import platform
    import subprocess as real_subprocess

    processor = real_subprocess.run(["uname", "-p"], capture_output=True, text=True).stdout.strip()
    expected = platform.platform()
    started = []
    monkeypatch.setattr(real_subprocess, "Popen", lambda *a, **k: started.append(a) or (_ for _ in ()).throw(OSError()))
    text = hardware._os_text()
    assert started == []
    if processor in ("unknown", "", os.uname().machine):  # what GNU uname prints on Linux
        assert text == expected
    else:  # a uname that names the processor: platform() has it between the machine and "with"
        assert text == expected.replace(f"-{processor}", "", 1)
