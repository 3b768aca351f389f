"""`benchpack import harbor JOB_DIR`: Harbor jobs written with Harbor's own models (tests/data/interop/harbor/,
made by make_harbor_job.py) become labelled bundles; trials are bound to exported tasks by their lock digest."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from benchpack.bundles.validate import validate_bundle
from benchpack.cli import main
from tests.data_paths import DATA
from tests.environment import needs
from tests.hostile import snapshot
from tests.interop.tools import harbor_python, tool_missing

HARBOR = DATA / "interop" / "harbor"
EXPORTED = HARBOR / "export"
MAKE_JOB = DATA / "interop" / "make_harbor_job.py"


def parts(out: Path) -> tuple[dict, list[dict], dict]:
    manifest = json.loads((out / "bundle.json").read_text())
    run = out / manifest["runs"][0]["path"]
    rows = [json.loads(line) for line in (run / "run.jsonl").read_text().splitlines()]
    return manifest, rows, json.loads((run / "run-metadata.json").read_text())


@pytest.mark.parametrize("job", ["job-0.25", "job-legacy"])
def test_a_harbor_job_becomes_a_labelled_bundle_with_one_row_per_bound_trial(job, tmp_path, capsys):
    out = tmp_path / "bundle"
    assert main(["import", "harbor", str(HARBOR / job), "--out", str(out), "--exported", str(EXPORTED),
                 "--runtime", "llama.cpp b6123"]) == 0
    assert "3 trial rows (1/2 passed, 1 not scored), 1 refused, imported from harbor 0.25.0" in capsys.readouterr().out
    assert validate_bundle(out).ok
    manifest, rows, metadata = parts(out)
    assert manifest["source"]["label"] == "imported from harbor 0.25.0"
    assert all(r["adapter"] == "imported-harbor" and r["case"] == "patch-from-failure__fix-split-bill" for r in rows)
    passed, failed, errored = rows  # trial1 pass, trial2 fail, trial4 exception (trial3 refused)
    assert passed["scoring"] == {"mode": "harbor-reward", "passed": True}
    assert failed["scoring"]["passed"] is False
    assert errored["ok"] is False and "scoring" not in errored and "AgentTimeoutError" in errored["error"]
    figures = passed["backend"]["imported"]["figures"]
    assert figures["agent"] == "mini-swe-agent@1.14.2" and figures["local_model"] is True
    assert figures["model_api_format"] == "openai_chat_completions" and figures["rewards"] == {"reward": 1.0}
    assert figures["phases"]["agent_execution_s"] == 81.0 and figures["transcript_captured"] is True
    assert [s["t_s"] for s in figures["steps"]] == [0.0, 15.0, 45.0]
    assert passed["tokens"] == {"prompt": 5201, "output": 381, "cached_prompt": 1024, "source": "harbor"}
    refused = metadata["imported"]["tool_figures"]["refused_trials"]
    assert [r["trial"] for r in refused] == ["patch-from-failure__fix-split-bill__trial3"]
    assert "not the one Benchpack exports" in refused[0]["reason"]
    assert metadata["imported"]["figures"]["pass_rate"] == {"value": 0.5, "passed": 1, "scored": 2}
    assert "hardware" in metadata["imported"]["unknown"] and "runtime" not in metadata["imported"]["unknown"]


def test_binding_without_exported_re_exports_the_named_pack_version(tmp_path):
    """No --exported: the lock names benchpack/patch-from-failure.fix-split-bill at 1.1.0, which is exported
    again here; its digest must be the trial's."""
    out = tmp_path / "bundle"
    assert main(["import", "harbor", str(HARBOR / "job-0.25"), "--out", str(out)]) == 0
    assert len(parts(out)[1]) == 3


def test_an_answer_mode_trial_is_bound_to_the_answer_mode_export_and_kept_apart(tmp_path):
    """A trial of `benchpack/<pack>.<case>.answer` binds only to the answer-mode export's digest (re-exported
    here in that mode), and its rows are the case `<pack>__<case>__answer`: another workload than agent mode."""
    from benchpack.interop.harbor_export import export_pack

    answer = next(t for t in export_pack("patch-from-failure@1.1.0", tmp_path / "answer-export", "answer"))
    job = _job_copy(tmp_path)
    for trial, digest in ((TRIAL, answer.digest), ("patch-from-failure__fix-split-bill__trial2", "ab" * 32)):
        _edit(job / trial / "lock.json", lambda d, digest=digest: d["task"].update(name=answer.name, digest=f"sha256:{digest}"))
        _edit(job / trial / "result.json", lambda d, digest=digest: d.update(task_name=answer.name, task_checksum=digest))
    out = tmp_path / "bundle"
    assert main(["import", "harbor", str(job), "--out", str(out)]) == 0
    _, rows, metadata = parts(out)
    by_case = {}
    for r in rows:
        by_case.setdefault(r["case"], []).append(r["backend"]["imported"]["figures"]["benchpack_mode"])
    assert by_case == {"patch-from-failure__fix-split-bill__answer": ["answer"],
                       "patch-from-failure__fix-split-bill": ["agent"]}
    refused = {r["trial"]: r["reason"] for r in metadata["imported"]["tool_figures"]["refused_trials"]}
    assert "not the one Benchpack exports" in refused["patch-from-failure__fix-split-bill__trial2"]


def _job_copy(tmp_path: Path) -> Path:
    job = tmp_path / "job"
    shutil.copytree(HARBOR / "job-0.25", job)
    return job


def _edit(path: Path, change) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


TRIAL = "patch-from-failure__fix-split-bill__trial1"
HOSTILE = [
    ("unfinished", "result.json", lambda d: d["stats"].update(n_completed_trials=2), "n_completed_trials: 2 of 4"),
    ("trial-count-lies", "result.json", lambda d: d.update(n_total_trials=7), "n_total_trials: says 7 trials"),
    ("no-stats", "result.json", lambda d: d.pop("stats"), "stats: missing"),
    ("digest-not-hex", f"{TRIAL}/lock.json", lambda d: d["task"].update(digest="sha256:xyz"), "task.digest: must be sha256"),
    ("checksum-differs", f"{TRIAL}/result.json", lambda d: d.update(task_checksum="0" * 64), "task_checksum: differs"),
    ("task-renamed", f"{TRIAL}/result.json", lambda d: d.update(task_name="other/x"), "task_name: is not the lock's task"),
    ("no-reward", f"{TRIAL}/result.json", lambda d: d["verifier_result"].update(rewards={"tests": 1}), "rewards.reward: missing"),
    ("reward-string", f"{TRIAL}/result.json", lambda d: d["verifier_result"].update(rewards={"reward": "1"}), "rewards.reward: must be a number"),
    ("tokens-negative", f"{TRIAL}/result.json", lambda d: d["agent_result"].update(n_input_tokens=-5), "agent_result.n_input_tokens: must be at least 0"),
    ("phase-backwards", f"{TRIAL}/result.json",
     lambda d: d["agent_execution"].update(finished_at="2026-12-06T02:00:00Z"), "agent_execution: finished_at is before"),
    ("no-agent-info", f"{TRIAL}/result.json", lambda d: d.pop("agent_info"), "agent_info: missing"),
    ("versions-differ", f"{TRIAL}/lock.json", lambda d: d["harbor"].update(version="0.24.0"), "harbor.version: Harbor 0.25.0 differs from the job's other trials (0.24.0)"),
    ("trajectory-steps-object", f"{TRIAL}/agent/trajectory.json", lambda d: d.update(steps={}), "steps: must be an array"),
]


@pytest.mark.parametrize("case_id,path,change,expected", HOSTILE, ids=[h[0] for h in HOSTILE])
def test_a_broken_job_is_refused_naming_the_field(case_id, path, change, expected, tmp_path, capsys):
    job = _job_copy(tmp_path)
    _edit(job / path, change)
    before = snapshot(tmp_path)
    assert main(["import", "harbor", str(job), "--out", str(tmp_path / "out"), "--exported", str(EXPORTED)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and expected in err[0] and "Traceback" not in err[0], err
    assert snapshot(tmp_path) == before


def test_a_job_of_only_foreign_tasks_is_refused(tmp_path, capsys):
    job = _job_copy(tmp_path)
    for trial in job.iterdir():
        if trial.is_dir():
            _edit(trial / "lock.json", lambda d: d["task"].update(digest="sha256:" + "cd" * 32))
            _edit(trial / "result.json", lambda d: d.update(task_checksum="cd" * 32))
    assert main(["import", "harbor", str(job), "--out", str(tmp_path / "out"), "--exported", str(EXPORTED)]) == 2
    assert "no trial is bound to a task Benchpack exported" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
@needs(lambda: tool_missing("harbor") is None, "needs Harbor's pinned venv: bash scripts/interop-tools.sh")
def test_a_job_made_now_by_harbors_models_from_a_fresh_export_imports(tmp_path):
    export = tmp_path / "export"
    assert main(["export", "harbor", "python-regression-fix", "--out", str(export)]) == 0
    job = tmp_path / "job"
    done = subprocess.run([str(harbor_python()), str(MAKE_JOB), str(export), str(job)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    out = tmp_path / "bundle"
    assert main(["import", "harbor", str(job), "--out", str(out)]) == 0  # bound by re-exporting the pack
    manifest, rows, metadata = parts(out)
    assert len(rows) == 3 and {r["case"] for r in rows} == {"python-regression-fix__fix-prerelease-order"}
