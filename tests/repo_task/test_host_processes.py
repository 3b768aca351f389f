"""No host process runs in a candidate-written directory or with configuration the candidate wrote.

An external agent (the real runner, executor, sandbox and the bundled
product-offer-matching verifier) fills the workspace with every file a host
tool might read from its working directory or PATH: rust-toolchain.toml,
.cargo/config.toml, pyproject.toml, setup.cfg, conftest.py,
sitecustomize.py, a .pth file, and executables named like the tools the
runner uses (rustc, cargo, git, python3, bwrap, sh). Each of them writes a
marker into a host directory if it ever runs on the host (inside the sandbox
that directory is not mounted, so the write fails there).

The machine's rustc may be a rustup proxy; to see what a proxy would see, a
fake `rustc` first on PATH records its cwd, its environment and whether a
rust-toolchain.toml was within reach. It must be asked exactly once, when the
runner starts, from a directory with no candidate file in it.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from benchpack.packs.loader import bundled_packs_dir, load_pack
from benchpack.repo_task.integration import RepoTaskExecutor
from tests.repo_task.test_repo_task_support import adapter_result, run_options

pytestmark = pytest.mark.bubblewrap

FAKE_RUSTC = """\
#!{python}
import json, os, sys
here = os.getcwd()
reach = [d for d in [here, *[os.path.dirname(here)] ] if os.path.exists(os.path.join(d, "rust-toolchain.toml"))]
with open({log!r}, "a") as log:
    log.write(json.dumps({{"argv": sys.argv[1:], "cwd": here, "env": sorted(os.environ), "toolchain_files": reach}}) + "\\n")
if sys.argv[1:] == ["--print", "sysroot"]:
    print({sysroot!r})
"""

MARKING_PYTHON = "import pathlib\ntry:\n    pathlib.Path({path!r}).write_text('ran on the host')\nexcept OSError:\n    pass\n"
MARKING_SHELL = "#!/bin/sh\necho ran >> {path} 2>/dev/null\nexit 0\n"
SHADOWED = ("rustc", "cargo", "git", "python3", "python", "bwrap", "sh", "env")

HOSTILE_AGENT = """\
import argparse, os, pathlib, stat
p = argparse.ArgumentParser()
for n in ("--workspace", "--case", "--output-dir", "--repetition", "--context"):
    p.add_argument(n)
ws = pathlib.Path(p.parse_args().workspace)
markers = {markers!r}
def py(name):
    return "import pathlib\\ntry:\\n    pathlib.Path(%r).write_text('ran on the host')\\nexcept OSError:\\n    pass\\n" % (markers + "/" + name)
for where in (ws, ws / "python", ws / "rust"):
    (where / "rust-toolchain.toml").write_text('[toolchain]\\nchannel = "nightly-2099-01-01"\\n')
    (where / ".cargo").mkdir(exist_ok=True)
    (where / ".cargo" / "config.toml").write_text('[build]\\nrustc-wrapper = "%s"\\n' % (ws / "bin" / "rustc"))
    (where / "pyproject.toml").write_text('[tool.pytest.ini_options]\\naddopts = "-p conftest"\\n')
    (where / "setup.cfg").write_text("[options]\\npy_modules = sitecustomize\\n")
    (where / "conftest.py").write_text(py("conftest"))
    (where / "sitecustomize.py").write_text(py("sitecustomize"))
    (where / "usercustomize.py").write_text(py("usercustomize"))
    (where / "zz-hook.pth").write_text("import sitecustomize\\n")
    (where / "bin").mkdir(exist_ok=True)
    for name in {shadowed!r}:
        for target in (where / name, where / "bin" / name):
            target.write_text("#!/bin/sh\\necho ran >> %s/%s 2>/dev/null\\nexit 0\\n" % (markers, name))
            target.chmod(0o755)
"""


@pytest.fixture
def fake_rust(tmp_path, monkeypatch):
    """A fake rustc first on PATH (records every call); its sysroot has no cargo."""
    bin_dir, sysroot, log = tmp_path / "fake-bin", tmp_path / "fake-sysroot", tmp_path / "rustc.log"
    bin_dir.mkdir()
    (sysroot / "bin").mkdir(parents=True)
    rustc = bin_dir / "rustc"
    rustc.write_text(FAKE_RUSTC.format(python=sys.executable, log=str(log), sysroot=str(sysroot)))
    rustc.chmod(rustc.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("RUSTFLAGS", "--cfg from_the_runner_env")  # not for the toolchain query
    (tmp_path / "home").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return log


def calls(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


@pytest.mark.parametrize("case_id", ["cluster-offers-rust", "cluster-offers-python"])
def test_candidate_config_and_path_shadowing_change_nothing_on_the_host(tmp_path, fake_rust, monkeypatch, case_id):
    markers = tmp_path / "markers"
    markers.mkdir()
    agent = tmp_path / "agent.py"
    agent.write_text(HOSTILE_AGENT.format(markers=str(markers), shadowed=SHADOWED))
    pack = load_pack(bundled_packs_dir() / "product-offer-matching")
    case = next(c for c in pack.cases if c.id == case_id)

    # Every process the runner itself starts on the host, with its cwd.
    started: list[tuple[list[str], str]] = []
    real_popen_init = subprocess.Popen.__init__

    def recording_init(self, args, *a, **kw):
        started.append((list(args) if not isinstance(args, (str, bytes)) else [args], str(kw.get("cwd") or os.getcwd())))
        return real_popen_init(self, args, *a, **kw)

    monkeypatch.setattr(subprocess.Popen, "__init__", recording_init)
    executor = RepoTaskExecutor(pack, run_options(tmp_path), external_agent_argv=[sys.executable, str(agent)], grace_s=0.3)
    assert len(calls(fake_rust)) == 1, "the toolchain is asked once, when the runner starts"
    execution = executor.prepare(case, 1, tmp_path / "out")
    workspace = execution.workspace.path
    row = executor.finish(execution, adapter_result(""))

    # The agent really wrote its files (so the run below had them to read).
    assert (workspace / "rust-toolchain.toml").is_file() and (workspace / "bin" / "rustc").is_file()
    # Nothing the candidate wrote ran on the host.
    assert sorted(p.name for p in markers.iterdir()) == []
    # The toolchain query: once, at start, from a directory with no candidate file, pinned environment.
    (query,) = calls(fake_rust)
    assert query["argv"] == ["--print", "sysroot"]
    assert not query["toolchain_files"]
    assert not Path(query["cwd"]).resolve().is_relative_to(tmp_path / "out")
    assert "RUSTFLAGS" not in query["env"] and "RUSTC_WRAPPER" not in query["env"]
    # No host process the runner started had the workspace (or anything under it) as its cwd.
    for argv, cwd in started:
        assert not Path(cwd).resolve().is_relative_to(workspace.resolve()), (argv[:3], cwd)
    # The verifier ran and judged (it failed: the skeleton matcher is no answer; the Rust build has no cargo).
    # (its sitecustomize.py and PATH shadows also inspect the environment: "suspicious" since issue 31)
    assert row["repo_task"]["status"] in ("failed", "suspicious") and row["scoring"]["passed"] is False
    verdict = json.loads((tmp_path / "out" / row["verify"]["path"]).read_text())
    assert verdict["seed"] and verdict["verifykit"] == 3
    if case_id == "cluster-offers-rust":
        assert "no Rust toolchain" in next(c["detail"] for c in verdict["checks"] if c["id"] == "build")


def test_the_launcher_starts_bwrap_outside_the_candidate_directory(tmp_path):
    """The verifier's sandbox launcher never chdirs into the candidate's copy on the host:
    bwrap starts where the verifier started it and changes directory inside the sandbox."""
    from benchpack.repo_task import sandbox

    policy = sandbox.make_policy(unsandboxed=False, hidden=(), secret=())
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "bwrap").write_text(MARKING_SHELL.format(path=tmp_path / "marker"))
    (ws / "bwrap").chmod(0o755)
    start = tmp_path / "start"
    start.mkdir()
    env = {**os.environ, **sandbox.verifier_environment(policy)}
    launcher = json.loads(env[sandbox.LAUNCHER_ENV])
    probe = "import os; print(os.getcwd())"
    result = subprocess.run([*launcher, "--cwd", str(ws), "--writable", str(ws), "--", sys.executable, "-I", "-c", probe],
                            cwd=start, env=env, capture_output=True, text=True, timeout=60)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == str(ws)  # inside: the workspace
    assert not (tmp_path / "marker").exists()
