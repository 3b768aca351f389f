"""verify-script scoring: the verifier subprocess, its artifacts and the authoritative verify JSON."""

import json
from pathlib import Path
import os
import sys

import pytest

import benchpack.repo_task.verify as verify_module
from benchpack.repo_task.integration import RepoTaskExecutor
from tests.repo_task.test_repo_task_support import GREETING_FIX, adapter_result, fenced, run_options, tree_hash, write_repo_pack

pytestmark = pytest.mark.bubblewrap  # candidate code runs in the real sandbox

ARGS = """\
    import argparse, json, os, pathlib, sys, time
    p = argparse.ArgumentParser()
    for n in ("--workspace", "--case", "--pack-id", "--pack-version", "--source-fixture-id", "--patch", "--output"):
        p.add_argument(n, required=True)
    a = p.parse_args()
"""


def verify(tmp_path, body, text="", scoring_extra="", grace_s=0.3):
    pack = write_repo_pack(tmp_path, verifier=ARGS + body, scoring_extra=scoring_extra)
    before = tree_hash(pack.root)
    executor = RepoTaskExecutor(pack, run_options(tmp_path), grace_s=grace_s)
    row = executor.finish(executor.prepare(pack.cases[0], 1, tmp_path / "out"), adapter_result(text))
    assert tree_hash(pack.root) == before
    out = tmp_path / "out"
    document = json.loads((out / "verify/fix/rep-001.json").read_text())
    return row, document, out


def test_it_passes_on_exit_zero_and_writes_the_minimal_json(tmp_path):
    row, document, out = verify(tmp_path, "    print('checked')\n")
    assert document == {"exit_code": 0, "passed": True}
    assert row["verify"] == {"path": "verify/fix/rep-001.json", "stdout_path": "verify/fix/rep-001.stdout.log",
                             "stderr_path": "verify/fix/rep-001.stderr.log"}
    assert row["repo_task"] == {"status": "passed", "verify_exit_code": 0}
    assert row["scoring"] == {"mode": "verify-script", "passed": True}
    assert (out / "verify/fix/rep-001.stdout.log").read_text() == "checked\n"


def test_it_fails_on_a_nonzero_exit(tmp_path):
    row, document, _ = verify(tmp_path, "    sys.exit(3)\n")
    assert document == {"exit_code": 3, "passed": False}
    assert row["repo_task"] == {"status": "failed", "verify_exit_code": 3, "failure_reason": "the verifier exited with status 3"}
    assert row["scoring"] == {"mode": "verify-script", "passed": False}


def test_it_keeps_the_verifiers_json_object_but_forces_the_verdict(tmp_path):
    body = "    pathlib.Path(a.output).write_text(json.dumps({'exit_code': 0, 'tests': 4}))\n    sys.exit(1)\n"
    _, document, _ = verify(tmp_path, body)
    assert document == {"passed": False, "exit_code": 1, "tests": 4}


@pytest.mark.parametrize("stated, code", [("'outcome': 'fail'", 0), ("'outcome': 'pass'", 1), ("'passed': False", 0)])
def test_an_exit_status_that_disagrees_with_the_document_is_an_error_never_a_pass(tmp_path, stated, code):
    """Issue 31 item 6: a hook that forces the verifier's exit status (a .pth calling os._exit(0))
    cannot turn a failing document into a pass; the disagreement itself is recorded as an error."""
    body = f"    pathlib.Path(a.output).write_text(json.dumps({{{stated}}}))\n    sys.exit({code})\n"
    row, document, _ = verify(tmp_path, body)
    assert document["passed"] is False and document["outcome"] == "error"
    assert "disagrees" in document["output_error"]
    assert row["repo_task"]["status"] == "error" and row["scoring"]["passed"] is False


def test_the_verifier_runs_without_the_site_module(tmp_path):
    """No `.pth` file or sitecustomize of any site-packages can run inside the verifier: `-S`."""
    body = ("    import sys\n    pathlib.Path(a.output).write_text(json.dumps({'outcome': 'pass', "
            "'no_site': sys.flags.no_site, 'site': 'site' in sys.modules, "
            "'site_packages': [p for p in sys.path if 'site-packages' in p]}))\n")
    _, document, _ = verify(tmp_path, body)
    assert (document["no_site"], document["site"], document["site_packages"]) == (1, False, [])
    assert document["passed"] is True


@pytest.mark.parametrize("content, why", [("{not json", "verify JSON is not valid JSON"),
                                          ("[1, 2]", "verify JSON is not a JSON object")])
def test_it_replaces_malformed_json_at_a_normal_exit_and_says_why(tmp_path, content, why):
    _, document, _ = verify(tmp_path, f"    pathlib.Path(a.output).write_text({content!r})\n")
    assert document == {"exit_code": 0, "passed": True, "output_error": why}


def test_it_receives_the_documented_arguments_outside_the_workspace(tmp_path):
    body = "    print(json.dumps({'argv': sys.argv[1:], 'exe': sys.executable, 'cwd': os.getcwd()}))\n"
    row, _, out = verify(tmp_path, body, text=fenced(GREETING_FIX))
    out = out.resolve()
    seen = json.loads((out / "verify/fix/rep-001.stdout.log").read_text())
    assert seen["argv"] == ["--workspace", str(out / "workspace/fix/rep-001"), "--case", "fix", "--pack-id", "repo-pack",
                            "--pack-version", "0.1.0", "--source-fixture-id", "repo",
                            "--patch", str(out / "patch/fix/rep-001.diff"), "--output", str(out / "verify/fix/rep-001.json")]
    assert seen["exe"] == sys.executable
    # never in the workspace (a host process in a candidate-written directory): an empty one of its own
    assert not Path(seen["cwd"]).resolve().is_relative_to(out) and Path(seen["cwd"]).name == "cwd"


def test_it_runs_after_the_task_phase_and_patch_capture(tmp_path):
    body = "    ok = \"'hello'\" in (pathlib.Path(a.workspace) / 'app.py').read_text() and 'hello' in pathlib.Path(a.patch).read_text()\n    sys.exit(0 if ok else 1)\n"
    row, _, _ = verify(tmp_path, body, text=fenced(GREETING_FIX))
    assert row["repo_task"]["status"] == "passed"


def test_it_overlays_the_manifest_environment_on_a_pinned_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("BENCHPACK_TEST_INHERITED", "yes")  # the runner's variables are not passed on
    body = "    print(os.environ.get('BENCHPACK_TEST_INHERITED'), os.environ.get('FROM_PACK'), repr(os.environ.get('EMPTY')))\n"
    _, _, out = verify(tmp_path, body, scoring_extra=', environment = { FROM_PACK = "pack value", EMPTY = "" }')
    assert (out / "verify/fix/rep-001.stdout.log").read_text() == "None pack value ''\n"
    assert "FROM_PACK" not in os.environ


def test_it_defaults_the_verifier_timeout_to_300_seconds(tmp_path, monkeypatch):
    seen = []
    real = verify_module.run_bounded
    monkeypatch.setattr(verify_module, "run_bounded", lambda *a, **k: seen.append(k["timeout_s"]) or real(*a, **k))
    verify(tmp_path, "    pass\n")
    assert seen == [300.0]


HANG = "    print('partial', flush=True)\n    time.sleep(60)\n"


def test_it_records_a_timeout_with_partial_output_and_authoritative_json(tmp_path):
    body = "    pathlib.Path(a.output).write_text(json.dumps({'progress': 'half', 'passed': True}))\n" + HANG
    row, document, out = verify(tmp_path, body, scoring_extra=", timeout_s = 1.5")
    assert document == {"progress": "half", "passed": False, "exit_code": None, "timed_out": True, "timeout_s": 1.5}
    assert row["repo_task"] == {"status": "failed", "verify_exit_code": None,
                                "failure_reason": "the verifier timed out after 1.5 seconds"}
    assert row["scoring"] == {"mode": "verify-script", "passed": False}
    assert (out / "verify/fix/rep-001.stdout.log").read_text() == "partial\n"
    assert (out / "verify/fix/rep-001.stderr.log").exists()


def test_it_replaces_malformed_json_at_timeout_with_the_minimal_timeout_object(tmp_path):
    body = "    pathlib.Path(a.output).write_text('{half written')\n" + HANG
    _, document, _ = verify(tmp_path, body, scoring_extra=", timeout_s = 1.5")
    assert document == {"exit_code": None, "passed": False, "timed_out": True, "timeout_s": 1.5}


def test_it_kills_the_verifiers_whole_process_group_on_timeout(tmp_path):
    body = """\
    import subprocess
    child = subprocess.Popen([sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)"])
    print(child.pid, flush=True)
    time.sleep(60)
"""
    _, document, out = verify(tmp_path, body, scoring_extra=", timeout_s = 1.5")
    import psutil

    child = int((out / "verify/fix/rep-001.stdout.log").read_text())
    assert not psutil.pid_exists(child) or psutil.Process(child).status() == psutil.STATUS_ZOMBIE
    assert document["timed_out"] is True


def test_it_never_writes_through_a_symlink_the_verifier_planted(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    _, document, out = verify(tmp_path, f"    os.symlink({str(victim)!r}, a.output)\n")
    assert victim.read_text() == "keep me\n"
    assert not (out / "verify/fix/rep-001.json").is_symlink()
    assert document == {"exit_code": 0, "passed": True, "output_error": "verify JSON is not a regular file"}


def test_it_fails_the_case_when_the_verifier_phase_writes_into_the_pack_and_restores_it(tmp_path):
    """A passing verifier that wrote into the pack still fails the case, with the reason in the row."""
    pack = write_repo_pack(tmp_path, verifier=ARGS + "    (pathlib.Path(__file__).parent / 'scribble.txt').write_text('x')\n")
    executor = RepoTaskExecutor(pack, run_options(tmp_path))
    row = executor.finish(executor.prepare(pack.cases[0], 1, tmp_path / "out"), adapter_result(""))
    scribble = pack.root / "verify" / "scribble.txt"
    stderr = (tmp_path / "out" / row["verify"]["stderr_path"]).read_text()
    assert stderr == ("\nbenchpack: the verifier changed guarded paths outside the workspace (the case fails): "
                      f"{scribble}\n"
                      "benchpack: restored 1 pack path(s) from the copy taken before the run\n")
    assert not scribble.exists()
    assert row["scoring"] == {"mode": "verify-script", "passed": False}
    assert row["repo_task"] == {
        "status": "failed", "verify_exit_code": 0,
        "guarded_writes": [{"phase": "verifier", "paths": [str(scribble)], "count": 1}],
        "failure_reason": f"guarded-path write: the verifier changed {scribble}",
    }
