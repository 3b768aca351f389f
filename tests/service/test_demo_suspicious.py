"""The demo shows a suspicious answer (issue 31 item 3): one of its coding runs holds an answer the pack's own
verifier screens `suspicious` (the known-good fix plus a line reading the interpreter's flags), so a visitor
sees the mark on the coding board, the run page and the review page.

The plan test reads demo_plan() without running anything; the sandboxed test runs that one planned run as the
demo does (its scripted agent through the measuring proxy, the pack's verifier in bubblewrap), publishes it
the demo's way and reads the pages. The whole seeded demo is test_e2e_demo.py's.
"""

from __future__ import annotations

import json
import re

import pytest

from benchpack.bundles.archives import pack_archive
from benchpack.bundles.create import create_bundle
from benchpack.refserver.server import RefServer
from benchpack.repo_task.kits.verifykit_3.verifykit import PYTHON_SCREEN
from registry_site import demo_data
from registry_site.catalogue.models import PublishedRun
from submissions import states
from submissions.models import Submission
from submissions.review import approve_with_reason

PACK = "python-regression-fix"


def _final_reply(run) -> str:
    """What the scripted endpoint answers the agent's last step (the fix): _agent_script puts it first."""
    return run.replies[0]["content"]


def _screened(reply: str) -> list[str]:
    """The screen's labels for the lines the reply's diff adds (the verifier screens the added lines)."""
    added = [line[1:] for line in reply.splitlines() if line.startswith("+") and not line.startswith("+++")]
    return [label for line in added for label, pattern in PYTHON_SCREEN if re.search(pattern, line)]


def _coding_runs():
    return [run for _, runs in demo_data.demo_plan() for run in runs if run.pack_id == PACK]


def test_exactly_one_planned_coding_answer_is_suspicious_in_the_named_system():
    runs = _coding_runs()
    assert len(runs) == 12 and all(run.agent for run in runs)
    flagged = [(run, _screened(_final_reply(run))) for run in runs]
    suspicious = [(run.model, run.machine, labels) for run, labels in flagged if labels]
    assert suspicious == [(*demo_data.SUSPICIOUS_SYSTEM, ["interpreter flags and argv"])]
    # it is still the fix (known-good plus the one line): its failure is the screen's, not a wrong patch
    sly = _final_reply(next(run for run, labels in flagged if labels))
    good, _ = demo_data._coding_replies()
    assert sly.replace(f"+{demo_data.SUSPICIOUS_LINE}\n", "").replace("-57,7 +57,13", "-57,7 +57,12") == good
    # the system keeps two passes; the suspicious answer takes the place of a failure, so no pass rate moves
    system = [_final_reply(run) for run in runs if (run.model, run.machine) == demo_data.SUSPICIOUS_SYSTEM]
    assert system.count(good) == 2 and len(system) == 3


@pytest.mark.django_db
@pytest.mark.bubblewrap
@pytest.mark.slow
def test_the_demo_s_suspicious_run_is_marked_by_the_verifier_and_labelled_on_its_pages(
        tmp_path, submit, operator, client, django_capture_on_commit_callbacks):
    [run] = [run for run in _coding_runs() if _screened(_final_reply(run))]
    out = tmp_path / "results" / run.slug
    with RefServer() as ref:
        demo_data._run_one(run, ref, out)
    [row] = [json.loads(line) for line in (out / "run.jsonl").read_text().splitlines()]
    assert row["agent_session"]["turns"] == 3  # the scripted agent applied it, through the measuring proxy
    assert row["repo_task"]["status"] == "suspicious" and row["scoring"]["passed"] is False, row["repo_task"]
    line = f"versionkit/version.py:61: interpreter flags and argv: {demo_data.SUSPICIOUS_LINE.strip()}"
    assert row["repo_task"]["suspicious"] == [line]

    archive = pack_archive(create_bundle([out], tmp_path / "bundle", "self-reported"), tmp_path / "coding.tar.gz")
    with django_capture_on_commit_callbacks(execute=True):
        submission = submit(archive)
    submission.refresh_from_db()
    assert submission.state == states.QUARANTINED, submission.validation_report
    Submission.objects.filter(pk=submission.pk).update(is_demo=True)  # as demo_data.seed does
    assert approve_with_reason(submission.pk, operator, demo_data.DEMO_REASON)
    published = PublishedRun.objects.get(submission=submission)
    assert published.is_demo

    assert client.get(f"/api/v1/runs/{published.pk}/").json()["suspicious_answers"] == 1
    run_page = client.get(f"/runs/{published.pk}/").content.decode()
    assert "1 answer introspected the verifier" in run_page and ">1 suspicious</small>" in run_page
    for board in (client.get(f"/leaderboards/{PACK}/"), client.get("/leaderboards/coding/", {"pack": PACK})):
        html = board.content.decode()
        assert '<span class="suspicious"' in html and ">1 suspicious</span>" in html and "suspicious-note" in html
    client.force_login(operator)
    review = client.get(f"/review/{submission.pk}/").content.decode()
    assert '<h2 id="suspicious">Suspicious answers</h2>' in review and "1 answer introspected the verifier" in review
    assert f"<code>{line}</code>" in review
