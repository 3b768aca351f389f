"""The public external-agent harness: runner-owned argv, context file, bounded process group."""

import json
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from benchpack.errors import ConfigError
from benchpack.repo_task import RepoTaskError
from benchpack.repo_task.executors import load_external_agent_argv
from benchpack.repo_task.integration import RepoTaskExecutor
from tests.repo_task.test_repo_task_support import adapter_result, run_options, tree_hash, write_repo_pack

pytestmark = pytest.mark.bubblewrap  # candidate code runs in the real sandbox

REFERENCE_AGENT = Path(__file__).resolve().parents[2] / "examples" / "external-agent" / "reference-agent.py"
EXTERNAL = '{ id = "external-agent", timeout_s = 20 }'
CHECK_MARKER = """\
    import argparse, pathlib, sys
    p = argparse.ArgumentParser()
    for n in ("--workspace", "--case", "--pack-id", "--pack-version", "--source-fixture-id", "--patch", "--output"):
        p.add_argument(n)
    a = p.parse_args()
    sys.exit(0 if (pathlib.Path(a.workspace) / "benchpack-reference-agent.txt").is_file() else 1)
"""


def agent_script(tmp_path, body, name="agent.py"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return [sys.executable, str(path)]


@pytest.fixture(autouse=True)
def quiet_home(tmp_path, monkeypatch):
    """Unsandboxed phases guard $HOME; on a shared machine other programs write there."""
    (tmp_path / "home").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))


def run_one(tmp_path, pack, argv, text="", grace_s=0.3, repetition=1, unsandboxed=False):
    executor = RepoTaskExecutor(pack, run_options(tmp_path, unsandboxed=unsandboxed), external_agent_argv=argv, grace_s=grace_s)
    execution = executor.prepare(pack.cases[0], repetition, tmp_path / "out")
    return executor.finish(execution, adapter_result(text))


# -- BENCHPACK_EXTERNAL_AGENT_ARGV ---------------------------------------------


def test_it_needs_no_argv_when_no_case_selects_the_external_agent(tmp_path):
    pack = write_repo_pack(tmp_path, harness='{ id = "fenced-patch" }')
    assert load_external_agent_argv({}, pack) is None


def test_it_accepts_a_json_array_of_strings(tmp_path):
    pack = write_repo_pack(tmp_path, harness=EXTERNAL)
    env = {"BENCHPACK_EXTERNAL_AGENT_ARGV": '["python3", "agent.py", "--flag=a b"]'}
    assert load_external_agent_argv(env, pack) == ["python3", "agent.py", "--flag=a b"]


@pytest.mark.parametrize(
    "value, message",
    [
        (None, "must be set to a JSON array of strings for external-agent case(s) fix"),
        ("python3 agent.py", "not a plain command string"),
        ('"python3 agent.py"', "got a JSON str"),
        ("[]", "must not be an empty array"),
        ('["python3", 3]', "[1]: must be a string, got int"),
        ('["python3", ""]', "[1]: must not be empty"),
        ('["python3", "a\\u0000b"]', "[1]: must not contain NUL bytes"),
    ],
)
def test_it_rejects_bad_argv_configuration_naming_the_variable(tmp_path, value, message):
    pack = write_repo_pack(tmp_path, harness=EXTERNAL)
    env = {} if value is None else {"BENCHPACK_EXTERNAL_AGENT_ARGV": value}
    with pytest.raises(ConfigError) as error:
        load_external_agent_argv(env, pack)
    assert all(line.startswith("BENCHPACK_EXTERNAL_AGENT_ARGV") for line in error.value.lines())
    assert message in str(error.value)


# -- running the agent ----------------------------------------------------------


def test_it_runs_the_reference_agent_with_context_and_records_its_effects(tmp_path):
    pack = write_repo_pack(tmp_path, harness=EXTERNAL, verifier=CHECK_MARKER)
    before = tree_hash(pack.root)
    row = run_one(tmp_path, pack, [sys.executable, str(REFERENCE_AGENT)])
    out = (tmp_path / "out").resolve()
    assert row["repo_task"] == {"status": "passed", "verify_exit_code": 0}
    assert row["task"] == {"stdout_path": "task/fix/rep-001.stdout.log", "stderr_path": "task/fix/rep-001.stderr.log"}
    assert (out / "task/fix/rep-001.stdout.log").read_text() == "reference-agent: wrote benchpack-reference-agent.txt for case fix repetition 1\n"
    assert (out / "task/fix/rep-001.stderr.log").read_text() == ""
    assert "+++ b/benchpack-reference-agent.txt" in (out / "patch/fix/rep-001.diff").read_text()
    assert json.loads((out / "task/fix/rep-001.model-calls.jsonl").read_text()) == {
        "schema_version": 1, "sequence": 1, "model": "test-model", "ok": True}
    assert "context" not in json.dumps(row)
    assert tree_hash(pack.root) == before


def test_it_writes_a_versioned_context_with_the_public_fields(tmp_path):
    pack = write_repo_pack(tmp_path, harness=EXTERNAL)
    run_one(tmp_path, pack, [sys.executable, str(REFERENCE_AGENT)])
    out = (tmp_path / "out").resolve()
    context = json.loads((out / "task/fix/rep-001.context.json").read_text())
    assert context["version"] == 1
    assert context["pack"] == {"id": "repo-pack", "version": "0.1.0", "description": "Repo-task test pack"}
    assert context["case"] == {"id": "fix", "kind": "repo-task", "prompt": "Fix the greeting.",
                               "fixture_refs": ["repo"], "harness": {"id": "external-agent", "timeout_s": 20.0}}
    assert context["workspace"] == {"path": str(out / "workspace/fix/rep-001"), "source_fixture_id": "repo",
                                    "source_path": "fixtures/repo"}
    assert context["run"] == {
        "output_dir": str(out), "repetition": 1,
        "task_stdout_path": str(out / "task/fix/rep-001.stdout.log"),
        "task_stderr_path": str(out / "task/fix/rep-001.stderr.log"),
        "run_metadata_path": None,
        "model_call_log_path": str(out / "task/fix/rep-001.model-calls.jsonl"),
    }
    assert context["adapter"]["id"] == "openai-chat" and context["adapter"]["model"] == "test-model"
    assert context["adapter"]["defaults"] == {"temperature": 0.0, "max_tokens": 64, "stream": False}
    assert context["fixtures"] == [{"id": "repo", "kind": "repo", "path": "fixtures/repo", "description": "The repository"}]


def test_it_passes_arguments_without_a_shell_and_runs_in_the_workspace(tmp_path):
    argv = agent_script(tmp_path, """\
        import json, os, sys
        print(json.dumps({"argv": sys.argv[1:], "cwd": os.getcwd()}))
    """) + ["$(touch pwned)", "a;b"]
    pack = write_repo_pack(tmp_path, harness=EXTERNAL)
    run_one(tmp_path, pack, argv)
    out = (tmp_path / "out").resolve()
    seen = json.loads((out / "task/fix/rep-001.stdout.log").read_text())
    assert seen["argv"] == ["$(touch pwned)", "a;b", "--workspace", str(out / "workspace/fix/rep-001"), "--case", "fix",
                            "--output-dir", str(out), "--repetition", "1",
                            "--context", str(out / "task/fix/rep-001.context.json")]
    assert seen["cwd"] == str(out / "workspace/fix/rep-001")
    assert not list(tmp_path.rglob("pwned"))


def test_it_records_a_nonzero_exit_as_a_task_outcome(tmp_path):
    argv = agent_script(tmp_path, "import sys\nprint('trying', file=sys.stderr)\nsys.exit(3)\n")
    pack = write_repo_pack(tmp_path, harness=EXTERNAL, verifier="raise SystemExit(1)\n")
    row = run_one(tmp_path, pack, argv)
    stderr = (tmp_path / "out/task/fix/rep-001.stderr.log").read_text()
    assert stderr == "trying\n\nbenchpack: external agent exited with status 3.\n"
    assert row["scoring"] == {"mode": "verify-script", "passed": False}


SPAWNER = """\
    import os, subprocess, sys, time
    token = sys.argv[1]
    stubborn = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(120)  # " + token
    kwargs = {"start_new_session": True} if "--escape" in sys.argv else {}
    child = subprocess.Popen([sys.executable, "-c", stubborn], **kwargs)
    workspace = sys.argv[sys.argv.index("--workspace") + 1]
    with open(os.path.join(workspace, "pids"), "w") as f:
        f.write(f"{os.getpid()} {child.pid}")
    print("spawned", flush=True)
    if "--exit" in sys.argv:
        sys.exit(0)
    time.sleep(120)
"""


def still_running(pid):
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def running_with(token):
    """Processes (outside any PID namespace view) whose command line carries `token`."""
    found = []
    for process in psutil.process_iter(["cmdline", "status"]):
        try:
            if process.info["status"] != psutil.STATUS_ZOMBIE and any(token in part for part in process.info["cmdline"] or []):
                found.append(process.pid)
        except psutil.Error:
            pass
    return found


def wait_until_gone(token, seconds=5):
    deadline = time.monotonic() + seconds
    while running_with(token) and time.monotonic() < deadline:
        time.sleep(0.05)
    return running_with(token)


@pytest.mark.parametrize("unsandboxed", [False, pytest.param(True, marks=pytest.mark.no_sandbox)],
                         ids=["bubblewrap", "none"])
@pytest.mark.parametrize("extra", [[], ["--escape"]], ids=["same-group", "own-session"])
def test_it_stops_a_hanging_agent_and_its_sigterm_ignoring_grandchild(tmp_path, extra, unsandboxed):
    token = f"benchpack-test-{tmp_path.name}-{unsandboxed}"
    pack = write_repo_pack(tmp_path, harness='{ id = "external-agent", timeout_s = 2.5 }')
    before = tree_hash(pack.root)
    row = run_one(tmp_path, pack, agent_script(tmp_path, SPAWNER) + [token] + extra, unsandboxed=unsandboxed)
    out = tmp_path / "out"
    assert wait_until_gone(token) == []
    if unsandboxed:  # real pids; in a sandbox they are the PID namespace's own
        pids = [int(p) for p in (out / "workspace/fix/rep-001/pids").read_text().split()]
        assert not [pid for pid in pids if still_running(pid)]
    assert (out / "task/fix/rep-001.stdout.log").read_text() == "spawned\n"
    assert (out / "task/fix/rep-001.stderr.log").read_text().endswith(
        "benchpack: external agent timed out after 2.5 seconds; process group stopped.\n")
    assert row["repo_task"]["status"] == "passed"  # the verifier still ran after the timeout
    assert row["sandbox"] == ("none" if unsandboxed else "bubblewrap")
    assert tree_hash(pack.root) == before


@pytest.mark.parametrize("unsandboxed", [False, pytest.param(True, marks=pytest.mark.no_sandbox)],
                         ids=["bubblewrap", "none"])
def test_it_kills_what_an_agent_leaves_running_after_it_exits(tmp_path, unsandboxed):
    token = f"benchpack-test-{tmp_path.name}-{unsandboxed}"
    pack = write_repo_pack(tmp_path, harness=EXTERNAL)
    run_one(tmp_path, pack, agent_script(tmp_path, SPAWNER) + [token, "--exit"], unsandboxed=unsandboxed)
    assert wait_until_gone(token) == []


FORGER = """\
    import argparse, pathlib
    p = argparse.ArgumentParser()
    for n in ("--workspace", "--case", "--output-dir", "--repetition", "--context"):
        p.add_argument(n)
    a = p.parse_args()
    out = pathlib.Path(a.output_dir)
    try:
        (out / "raw").mkdir(exist_ok=True)
        (out / "raw" / "forged.json").write_text("{}")
        print("forged")
    except OSError as exc:
        print("refused", exc.strerror)
    (pathlib.Path(a.workspace) / "ok.txt").write_text("inside is fine")
"""


@pytest.mark.no_sandbox
def test_it_fails_the_case_when_an_unsandboxed_agent_writes_outside_the_workspace(tmp_path):
    pack = write_repo_pack(tmp_path, harness=EXTERNAL)
    row = run_one(tmp_path, pack, agent_script(tmp_path, FORGER), unsandboxed=True)
    out = (tmp_path / "out").resolve()
    stderr = (out / "task/fix/rep-001.stderr.log").read_text()
    assert stderr == ("\nbenchpack: the external agent changed guarded paths outside the workspace (the case fails): "
                      f"{out / 'raw'}, {out / 'raw' / 'forged.json'}\n")
    assert row["sandbox"] == "none"
    assert row["scoring"] == {"mode": "verify-script", "passed": False}
    assert row["repo_task"]["guarded_writes"] == [
        {"phase": "external agent", "paths": [str(out / "raw"), str(out / "raw" / "forged.json")], "count": 2}]
    assert row["repo_task"]["failure_reason"] == f"guarded-path write: the external agent changed {out / 'raw'} (+1 more)"
    summary_lines = RepoTaskExecutor(pack, run_options(tmp_path, unsandboxed=True)).summary_sections(
        [{"case": "fix", **row}], out)
    assert any("guarded-path write" in section and "sandbox: none" not in section for section in summary_lines)


def test_it_keeps_a_sandboxed_agent_away_from_the_run_directory(tmp_path):
    pack = write_repo_pack(tmp_path, harness=EXTERNAL)
    row = run_one(tmp_path, pack, agent_script(tmp_path, FORGER))
    out = (tmp_path / "out").resolve()
    assert not (out / "raw" / "forged.json").exists()  # it wrote into the sandbox's own empty tree, if at all
    assert (out / "workspace/fix/rep-001/ok.txt").read_text() == "inside is fine"
    assert row["sandbox"] == "bubblewrap" and row["repo_task"]["status"] == "passed"
    assert "guarded" not in (out / "task/fix/rep-001.stderr.log").read_text()


def test_it_fails_the_run_when_the_agent_cannot_be_started(tmp_path):
    pack = write_repo_pack(tmp_path, harness=EXTERNAL)
    with pytest.raises(RepoTaskError, match="could not start the external agent"):
        run_one(tmp_path, pack, [str(tmp_path / "no-such-agent")])


@pytest.mark.no_sandbox
def test_it_restores_a_pack_an_unsandboxed_agent_wrote_into(tmp_path):
    """Detection alone would leave the source modified for the next repetition;
    the executor puts every added, changed or deleted pack path back."""
    argv = agent_script(tmp_path, """\
        import argparse, pathlib
        p = argparse.ArgumentParser()
        for n in ("--workspace", "--case", "--output-dir", "--repetition", "--context"):
            p.add_argument(n)
        a = p.parse_args()
        pack = pathlib.Path(a.output_dir).parent / "pack"  # the test lays the pack beside the output
        victims = sorted(p for p in pack.rglob("*") if p.is_file())
        victims[0].write_text("tampered")
        victims[-1].unlink()
        (pack / "planted").mkdir()
        (pack / "planted" / "evil.py").write_text("print('x')")
    """)
    pack = write_repo_pack(tmp_path, harness=EXTERNAL)
    before = tree_hash(pack.root)
    row = run_one(tmp_path, pack, argv, unsandboxed=True)
    assert tree_hash(pack.root) == before
    stderr = ((tmp_path / "out").resolve() / "task/fix/rep-001.stderr.log").read_text()
    assert "changed guarded paths outside the workspace (the case fails)" in stderr
    assert "benchpack: restored" in stderr
    assert row["repo_task"]["status"] == "failed" and row["repo_task"]["guarded_writes"][0]["count"] == 4


def test_it_never_shows_a_sandboxed_agent_the_pack(tmp_path):
    argv = agent_script(tmp_path, """\
        import argparse, pathlib
        p = argparse.ArgumentParser()
        for n in ("--workspace", "--case", "--output-dir", "--repetition", "--context"):
            p.add_argument(n)
        a = p.parse_args()
        pack = pathlib.Path(a.output_dir).parent / "pack"
        seen = sorted(str(p.relative_to(pack)) for p in pack.rglob("*")) if pack.exists() else None
        (pathlib.Path(a.workspace) / "seen.txt").write_text(repr(seen))
    """)
    pack = write_repo_pack(tmp_path, harness=EXTERNAL)
    run_one(tmp_path, pack, argv)
    assert ((tmp_path / "out").resolve() / "workspace/fix/rep-001/seen.txt").read_text() == "None"
