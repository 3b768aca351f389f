import json
import stat

import pytest

from benchpack import hardware
from benchpack.hardware import collect_hardware, linux_cpu_model, nvidia_gpus

REAL_KEYS = ["hostname", "platform", "os", "kernel", "cpu_model", "cpu_count", "ram_mb", "gpus", "chip"]


def fake_binary(directory, name, script):
    path = directory / name
    path.write_text("#!/bin/sh\n" + script + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


@pytest.fixture
def bin_dir(tmp_path, monkeypatch):
    """A PATH holding only the fake probe binaries a test puts there."""
    directory = tmp_path / "bin"
    directory.mkdir()
    monkeypatch.setenv("PATH", str(directory))
    return directory


def test_it_writes_the_keys_of_the_real_hardware_files(tmp_path):
    data = collect_hardware()
    assert list(data) == REAL_KEYS
    assert isinstance(data["cpu_count"], int) and data["ram_mb"] > 0
    hardware.write_hardware(tmp_path, data)
    assert json.loads((tmp_path / "hardware.json").read_text()) == data


def test_it_gives_nulls_when_every_probe_fails(bin_dir, tmp_path, monkeypatch):
    monkeypatch.setattr(hardware, "CPUINFO", tmp_path / "no-cpuinfo")

    def broken():
        raise OSError("no /proc")

    monkeypatch.setattr(hardware.psutil, "virtual_memory", broken)
    monkeypatch.setattr(hardware.psutil, "cpu_count", broken)
    monkeypatch.setattr(hardware.socket, "gethostname", broken)
    monkeypatch.setattr(hardware.platform, "platform", broken)
    data = collect_hardware()
    assert data["hostname"] is None and data["os"] is None
    assert (data["cpu_model"], data["cpu_count"], data["ram_mb"]) == (None, None, None)
    assert data["gpus"] == [] and data["chip"] is None


def test_it_reads_nvidia_gpus_from_nvidia_smi(bin_dir, monkeypatch):
    monkeypatch.setattr(hardware.sys, "platform", "linux")
    fake_binary(bin_dir, "nvidia-smi", 'echo "NVIDIA GeForce RTX 4090, 24564"; echo "NVIDIA A100-SXM4-80GB, 81920"')
    assert collect_hardware()["gpus"] == [
        {"model": "NVIDIA GeForce RTX 4090", "vram_mb": 24564},
        {"model": "NVIDIA A100-SXM4-80GB", "vram_mb": 81920},
    ]


def test_it_ignores_a_failing_nvidia_smi(bin_dir, monkeypatch):
    monkeypatch.setattr(hardware.sys, "platform", "linux")
    fake_binary(bin_dir, "nvidia-smi", 'echo "NVIDIA-SMI has failed" >&2; exit 9')
    assert collect_hardware()["gpus"] == []


def test_it_reports_apple_silicon_as_chip_and_gpu(bin_dir, monkeypatch):
    monkeypatch.setattr(hardware.sys, "platform", "darwin")
    fake_binary(bin_dir, "sysctl", 'echo "Apple M5 Max"')
    data = collect_hardware()
    assert (data["platform"], data["cpu_model"], data["chip"]) == ("darwin", "Apple M5 Max", "Apple M5 Max")
    assert data["gpus"] == [{"model": "Apple M5 Max", "vram_mb": None}]


def test_it_survives_a_mac_without_sysctl_or_system_profiler(bin_dir, monkeypatch):
    monkeypatch.setattr(hardware.sys, "platform", "darwin")
    data = collect_hardware()
    assert (data["cpu_model"], data["chip"], data["gpus"]) == (None, None, [])


def test_it_uses_the_host_label_instead_of_the_hostname(monkeypatch):
    monkeypatch.setattr(hardware.socket, "gethostname", lambda: "secret-box.corp")
    data = collect_hardware(host_label="lab-gpu-1")
    assert data["hostname"] == "lab-gpu-1"
    assert "secret-box" not in json.dumps(data)


def test_it_finds_the_cpu_model_in_proc_cpuinfo():
    x86 = "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel\t\t: 17\nmodel name\t: AMD EPYC 7763\n"
    arm = "processor\t: 0\nBogoMIPS\t: 108.00\n\nHardware\t: BCM2835\nModel\t\t: Raspberry Pi 5 Model B\n"
    assert linux_cpu_model(x86) == "AMD EPYC 7763"
    assert linux_cpu_model(arm) == "Raspberry Pi 5 Model B"
    assert linux_cpu_model("garbage") is None


def test_it_keeps_a_gpu_whose_memory_is_not_a_number():
    assert nvidia_gpus("Tesla T4, [N/A]\n\n") == [{"model": "Tesla T4", "vram_mb": None}]
