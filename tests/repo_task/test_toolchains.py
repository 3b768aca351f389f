"""Toolchain facts are asked once, from an empty directory, with a pinned environment;
host-side reads of candidate files never follow links."""

from __future__ import annotations

import json
import os
import stat
import sys

import pytest

from benchpack.repo_task.nofollow import NotRegular, read_regular
from benchpack.repo_task.toolchains import TOOLCHAINS_ENV, resolve_toolchains, toolchains_environment

FAKE = """#!{python}
import json, os, sys
with open({log!r}, "a") as f:
    f.write(json.dumps({{"cwd": os.getcwd(), "listing": os.listdir("."), "env": sorted(os.environ)}}) + "\\n")
print({sysroot!r})
"""


def fake_rustc(tmp_path, with_cargo=True):
    bin_dir, sysroot, log = tmp_path / "bin", tmp_path / "sysroot", tmp_path / "log"
    bin_dir.mkdir()
    (sysroot / "bin").mkdir(parents=True)
    if with_cargo:
        for name in ("cargo", "rustc"):
            (sysroot / "bin" / name).write_text("")
    rustc = bin_dir / "rustc"
    rustc.write_text(FAKE.format(python=sys.executable, log=str(log), sysroot=str(sysroot)))
    rustc.chmod(rustc.stat().st_mode | stat.S_IXUSR)
    return bin_dir, sysroot, log


def test_it_asks_from_an_empty_directory_with_only_the_locating_variables(tmp_path, monkeypatch):
    bin_dir, sysroot, log = fake_rustc(tmp_path)
    monkeypatch.chdir(tmp_path)  # the caller's cwd (it holds files) must not matter
    (tmp_path / "rust-toolchain.toml").write_text('[toolchain]\nchannel = "evil"\n')
    environ = {"PATH": f"relative/bin:{bin_dir}:/usr/bin", "HOME": str(tmp_path), "RUSTFLAGS": "-C evil",
               "RUSTC_WRAPPER": "/tmp/evil", "CARGO_HOME": str(tmp_path / "cargo")}  # fmt: skip
    facts = resolve_toolchains(environ)
    assert facts == {"rust": {"sysroot": str(sysroot.resolve()), "rustc": str(sysroot.resolve() / "bin" / "rustc"),
                              "cargo": str(sysroot.resolve() / "bin" / "cargo")}}  # fmt: skip
    (call,) = [json.loads(line) for line in log.read_text().splitlines()]
    assert call["listing"] == [] and call["cwd"] != str(tmp_path)
    assert "RUSTFLAGS" not in call["env"] and "RUSTC_WRAPPER" not in call["env"]
    assert json.loads(toolchains_environment(facts)[TOOLCHAINS_ENV]) == facts


def test_it_reports_no_rust_when_the_sysroot_has_no_cargo_or_there_is_no_rustc(tmp_path):
    bin_dir, _, _ = fake_rustc(tmp_path, with_cargo=False)
    assert resolve_toolchains({"PATH": str(bin_dir)}) == {}
    assert resolve_toolchains({"PATH": str(tmp_path / "nothing")}) == {}


def test_read_regular_refuses_links_fifos_and_oversize_files(tmp_path):
    (tmp_path / "real").write_bytes(b"data")
    os.symlink(tmp_path / "real", tmp_path / "link")
    os.mkfifo(tmp_path / "fifo")
    assert read_regular(tmp_path / "real") == b"data"
    for name in ("link", "fifo"):
        with pytest.raises(NotRegular):
            read_regular(tmp_path / name)
    with pytest.raises(NotRegular):
        read_regular(tmp_path / "real", limit=2)
