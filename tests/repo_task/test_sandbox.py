"""The bubblewrap sandbox candidate code runs in: what it sees, what it may write, and the
refusal to run repo tasks without one (real bwrap; CI installs it)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from benchpack.errors import ConfigError
from benchpack.repo_task import sandbox
from benchpack.repo_task.sandbox import (
    BUBBLEWRAP,
    NONE,
    POLICY_ENV,
    SandboxError,
    make_policy,
    popen_kwargs,
    sandbox_command,
)
from benchpack.run.runner import run_pack
from tests.repo_task.test_repo_task_support import run_options, write_repo_pack

pytestmark = pytest.mark.bubblewrap  # candidate code runs in the real sandbox

PROBE = r"""
import json, os, socket, sys
report = {"pid": os.getpid(), "env": sorted(os.environ), "home": os.environ.get("HOME")}
report["procs"] = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
def attempt(label, fn):
    try:
        fn()
        report[label] = "ok"
    except OSError as exc:
        report[label] = type(exc).__name__ + ":" + str(exc.errno)
attempt("write_workspace", lambda: open("written.txt", "w").write("x"))
if sys.argv[3] == "try-writes":  # only ever inside the sandbox: outside these would succeed
    attempt("write_prefix", lambda: open(os.path.join(sys.prefix, "planted.pth"), "w").write("x"))
    attempt("write_usr", lambda: open("/usr/planted", "w").write("x"))
for name, path in json.loads(sys.argv[1]).items():
    report[name] = sorted(os.listdir(path)) if os.path.isdir(path) else os.path.exists(path)
port = int(sys.argv[2])
attempt("connect_host_port", lambda: socket.create_connection(("127.0.0.1", port), timeout=2).close())
print(json.dumps(report))
"""


@pytest.fixture
def layout(tmp_path):
    """A pack with verify/ (secret), a run dir holding the workspace, a listening host port."""
    pack = tmp_path / "pack"
    (pack / "verify" / "hidden").mkdir(parents=True)
    (pack / "verify" / "hidden" / "answers.txt").write_text("42")
    (pack / "fixtures").mkdir()
    out = tmp_path / "out"
    workspace = out / "workspace" / "case" / "rep-001"
    workspace.mkdir(parents=True)
    (out / "run.jsonl").write_text("{}\n")
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    yield pack, out, workspace, listener.getsockname()[1]
    listener.close()


def run_probe(policy, workspace, paths, port, **kwargs):
    writes = "try-writes" if policy.mode == BUBBLEWRAP else "no-writes"
    command = sandbox_command(policy, [sys.executable, "-I", "-c", PROBE, json.dumps(paths), str(port), writes],
                              cwd=workspace, writable=(workspace,), **kwargs)  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, timeout=60,
                            **popen_kwargs(policy, cwd=workspace))  # fmt: skip
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_it_shows_candidate_code_only_its_workspace_and_a_read_only_interpreter(layout, monkeypatch):
    pack, out, workspace, port = layout
    monkeypatch.setenv("BENCHPACK_TEST_SECRET_TOKEN", "do-not-leak")
    policy = make_policy(unsandboxed=False, hidden=(pack, out), secret=(pack / "verify",))
    seen = run_probe(policy, workspace, {"pack": str(pack), "verify": str(pack / "verify"), "run_dir": str(out),
                                         "run_file": str(out / "run.jsonl"), "real_home": str(Path.home())}, port)  # fmt: skip
    assert seen["write_workspace"] == "ok" and (workspace / "written.txt").read_text() == "x"
    assert seen["write_prefix"] == "OSError:30" and seen["write_usr"] == "OSError:30"  # EROFS
    assert not Path(sys.prefix, "planted.pth").exists()
    assert seen["pack"] is False and seen["verify"] is False  # not mounted at all
    assert seen["run_dir"] == ["workspace"] and seen["run_file"] is False  # only the path down to the workspace
    assert seen["connect_host_port"] != "ok"  # no network: the host's listening port is unreachable
    assert max(seen["procs"]) < 10 and os.getpid() not in seen["procs"]  # a fresh /proc of its own PID namespace
    assert "BENCHPACK_TEST_SECRET_TOKEN" not in seen["env"] and seen["home"] == "/tmp/home"
    assert seen["real_home"] in (False, [".pyenv"], [".local"])  # at most the interpreter's own directory


def test_it_masks_secret_and_hidden_paths_inside_any_bind(layout):
    pack, out, workspace, port = layout
    policy = make_policy(unsandboxed=False, hidden=(pack, out), secret=(pack / "verify",))
    # a caller binding the whole pack still never exposes verify/
    seen = run_probe(policy, workspace, {"pack": str(pack), "verify": str(pack / "verify")}, port, read_only=(pack,))
    assert seen["pack"] == ["fixtures", "verify"] and seen["verify"] == []


def test_it_refuses_to_bind_anything_inside_a_secret_path(layout):
    pack, out, workspace, _ = layout
    policy = make_policy(unsandboxed=False, hidden=(pack, out), secret=(pack / "verify",))
    with pytest.raises(SandboxError, match="must never be visible"):
        sandbox_command(policy, ["true"], cwd=workspace, read_only=(pack / "verify" / "hidden",))


def test_it_runs_the_same_command_without_isolation_when_unsandboxed(layout, monkeypatch):
    pack, out, workspace, port = layout
    monkeypatch.setenv("BENCHPACK_TEST_SECRET_TOKEN", "do-not-leak")
    policy = make_policy(unsandboxed=True, hidden=(pack, out), secret=(pack / "verify",), private_dir=out.parent)
    assert policy.mode == NONE and sandbox_command(policy, ["x"], cwd=workspace) == ["x"]
    seen = run_probe(policy, workspace, {"verify": str(pack / "verify")}, port)
    assert seen["verify"] == ["hidden"]  # nothing is hidden without a sandbox: that is what `none` means
    assert "BENCHPACK_TEST_SECRET_TOKEN" not in seen["env"] and seen["home"] == str(out.parent / "home")


def test_it_refuses_repo_tasks_without_a_sandbox_before_writing_anything(tmp_path, monkeypatch):
    monkeypatch.setattr(sandbox, "probe_bubblewrap", lambda: (None, "bwrap is not on PATH"))
    pack = write_repo_pack(tmp_path)
    with pytest.raises(ConfigError) as error:
        run_pack(pack, run_options(tmp_path))
    message = str(error.value)
    assert "bwrap is not on PATH" in message and "apt-get install bubblewrap" in message and "--unsandboxed" in message
    assert not (tmp_path / "out").exists()


def test_it_marks_every_row_and_the_summary_when_run_unsandboxed(tmp_path, monkeypatch):
    from benchpack.refserver.server import RefServer
    from benchpack.results.resultdir import read_rows

    monkeypatch.setattr(sandbox, "probe_bubblewrap", lambda: (None, "bwrap is not on PATH"))
    pack = write_repo_pack(tmp_path, repetitions=2)
    with RefServer(responses=["no diff"], ttft_s=0.0, itl_s=0.0) as srv:
        outcome = run_pack(pack, run_options(tmp_path, endpoint=srv.openai_url, unsandboxed=True))
    rows = read_rows(outcome.out / "run.jsonl")
    assert [r["sandbox"] for r in rows] == [NONE, NONE]
    summary = (outcome.out / "summary.md").read_text()
    assert "## Sandbox" in summary and "**sandbox: none**" in summary and "rank below sandboxed" in summary


def test_the_cli_takes_unsandboxed_and_says_what_to_install(tmp_path, monkeypatch, capsys):
    from benchpack.cli import main

    monkeypatch.setattr(sandbox, "probe_bubblewrap", lambda: (None, "bwrap is not on PATH"))
    pack = write_repo_pack(tmp_path)
    args = ["run", str(pack.root), "--adapter", "openai-chat", "--model", "m", "--endpoint", "http://127.0.0.1:9/v1"]
    assert main([*args, "--out", str(tmp_path / "a")]) == 2
    assert "--unsandboxed" in capsys.readouterr().err and not (tmp_path / "a").exists()
    assert main([*args, "--out", str(tmp_path / "b"), "--unsandboxed"]) in (0, 1)  # the endpoint is down: a failed row
    rows = (tmp_path / "b" / "run.jsonl").read_text().splitlines()
    assert json.loads(rows[0])["sandbox"] == NONE


def test_the_launcher_applies_the_policy_from_the_environment(layout, tmp_path):
    pack, out, workspace, _ = layout
    policy = make_policy(unsandboxed=False, hidden=(pack, out), secret=(pack / "verify",))
    env = {**os.environ, **sandbox.verifier_environment(policy)}
    launcher = json.loads(env[sandbox.LAUNCHER_ENV])
    code = "import os; print(os.path.exists(%r), os.getcwd(), os.environ['MARK'])" % str(pack / "verify")
    result = subprocess.run([*launcher, "--cwd", str(workspace), "--writable", str(workspace), "--env", "MARK=m",
                             "--", sys.executable, "-I", "-c", code], env=env, capture_output=True, text=True, timeout=60)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False", str(workspace), "m"]
    bad = subprocess.run([*launcher, "--cwd", str(workspace), "--read-only", str(pack / "verify"), "--", "true"],
                         env=env, capture_output=True, text=True, timeout=60)  # fmt: skip
    assert bad.returncode == 125 and "must never be visible" in bad.stderr
    missing = subprocess.run([*launcher, "--cwd", str(workspace), "--", "true"], capture_output=True, text=True,
                             env={k: v for k, v in env.items() if k != POLICY_ENV}, timeout=60)  # fmt: skip
    assert missing.returncode == 125 and POLICY_ENV in missing.stderr


def test_it_records_which_sandbox_ran_the_candidate(tmp_path):
    policy = make_policy(unsandboxed=False, hidden=(), secret=())
    assert policy.mode == BUBBLEWRAP and sandbox.SandboxPolicy.from_json(policy.to_json()) == policy
    with pytest.raises(SandboxError):
        sandbox.SandboxPolicy.from_json('{"mode": "chroot"}')
