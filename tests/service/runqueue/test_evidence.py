"""A runner host's bundle is checked against the registry's own evidence (submissions.runqueue.evidence).

Each attack runs the real worker in-process against the scripted endpoint and
changes the result directory just before it is bundled, as a host that edits
its own worker would: another model, 64 GPUs, faster rows than it streamed, a
row it never streamed, another runtime. Each is refused at validation
(`invalid`, code runner.evidence, a reason naming the file and field) and
never reaches review; the untouched run waits for review.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from submissions import states as submission_states
from submissions.runqueue import states

pytestmark = pytest.mark.django_db(transaction=True)  # the watcher thread reads what the task commits


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in (path / "run.jsonl").read_text().splitlines() if line.strip()]


def _write_rows(path: Path, rows: list[dict]) -> None:
    (path / "run.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def _edit_rows(change):
    def edit(path: Path):
        _write_rows(path, [change(dict(row)) for row in _rows(path)])
    return edit


def _other_model(row):
    row["model"] = "llama-3-405b-instruct"
    return row


def _faster(row):
    row["timing"] = {**row["timing"], "decode_tps": 5000.0, "ttft_s": 0.0001}
    return row


def _sixty_four_gpus(path: Path):
    hardware = json.loads((path / "hardware.json").read_text())
    hardware["gpus"] = [{"model": "NVIDIA H200", "memory_mb": 143771}] * 64
    (path / "hardware.json").write_text(json.dumps(hardware))


def _extra_row(path: Path):
    rows = _rows(path)
    _write_rows(path, rows + [dict(rows[-1])])


def _other_runtime(path: Path):
    metadata = json.loads((path / "run-metadata.json").read_text())
    metadata["runtime"] = {"name": "vllm", "version": "0.9.0"}
    metadata.get("benchpack", {}).get("reported", {}).pop("runtime", None)
    (path / "run-metadata.json").write_text(json.dumps(metadata))


@pytest.fixture
def tampered(monkeypatch):
    """`tampered(edit)`: the worker's result directory is changed by `edit` right before it is bundled."""
    from submissions.runqueue.runner import execute

    original = execute.bundle_result

    def arm(edit):
        def bundle_result(result_dir, workdir):
            edit(Path(result_dir))
            return original(result_dir, workdir)
        monkeypatch.setattr(execute, "bundle_result", bundle_result)
    return arm


@pytest.mark.parametrize(("edit", "expected"), [
    (_edit_rows(_other_model), "model is 'llama-3-405b-instruct', the run request named 'scripted-demo'"),
    (_sixty_four_gpus, "hardware.json: hardware class"),
    (_edit_rows(_faster), "differs from the row streamed during the run (timing)"),
    (_extra_row, "the worker streamed"),
    (_other_runtime, "run-metadata.json: runtime.name is 'vllm'"),
], ids=["other-model", "64-gpus", "faster-than-streamed", "row-never-streamed", "other-runtime"])
def test_a_bundle_that_disagrees_with_the_evidence_is_refused(host, queue, run_as, tampered, edit, expected):
    tampered(edit)
    request = queue(host)
    assert run_as(host, request.pk) == states.FINISHED  # the host finished; the registry judges the bundle
    request.refresh_from_db()
    submission = request.submission
    assert submission.state == submission_states.INVALID, submission.validation_report
    assert "runner.evidence" in submission.error_codes()
    [finding] = [f for f in submission.validation_report["findings"] if f["code"] == "runner.evidence"]
    assert expected in finding["message"], finding["message"]
    assert not submission.files.exists()  # nothing to review, nothing to publish


def test_the_untouched_bundle_waits_for_review_and_publishes_as_runner_host(host, queue, run_as, operator):
    from registry_site.catalogue.models import PublishedRun
    from tests.service.vouch import approve

    request = queue(host)
    assert run_as(host, request.pk) == states.FINISHED
    request.refresh_from_db()
    assert request.submission.state == submission_states.QUARANTINED, request.submission.validation_report
    assert approve(request.submission.pk, operator)
    run = PublishedRun.objects.get(submission=request.submission)
    assert run.provenance == "runner-host" and run.row_count == request.rows.filter(attempt=request.attempts).count()
