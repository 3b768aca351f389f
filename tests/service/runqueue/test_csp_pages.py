"""The run queue's pages satisfy the site's Content-Security-Policy (docs/service.md):
no inline script or style, no event handlers; checked in every state they render."""

from __future__ import annotations

import pytest
from django.test import override_settings

from submissions.runqueue import states
from submissions.runqueue.models import Reproduction, RunRequest, RunRequestRow
from tests.service.test_csp import assert_csp_clean


@pytest.fixture
def published(submit, bundle_archive, operator):
    from tests.service.vouch import approve
    from submissions.tasks import validate_submission

    submission = submit(bundle_archive("2026-04-29-llama-server-runtime"))
    validate_submission(str(submission.pk))
    approve(submission.pk, operator)
    return submission.published_runs.get()


@override_settings(DEBUG=False)
def test_every_run_queue_page_satisfies_the_policy(client, host, queue, operator, published, submit, bundle_archive):
    queued = queue(host)
    running = queue(host, pack="runtime-sweep")
    RunRequest.objects.filter(pk=running.pk).update(state=states.RUNNING, attempts=1, progress_done=2,
                                                    progress_total=12, current="short rep 1/3", log_tail="log")
    for index, decode in enumerate((100.0, 110.0)):
        RunRequestRow.objects.create(request=running, attempt=1, index=index, case="short", repetition=index + 1,
                                     ok=True, raw={"case": "short", "ok": True, "timing": {"decode_tps": decode}})
    other = submit(bundle_archive("2026-04-29-llama-server-smoke"))
    from tests.service.vouch import approve
    from submissions.tasks import validate_submission

    validate_submission(str(other.pk))
    approve(other.pk, operator)
    Reproduction.objects.create(original=published, reproduction=other.published_runs.get(), verdict="not-reproduced",
                                independent=True, cases=[{"case": "short", "verdict": "not-reproduced", "reasons": [],
                                                          "checks": [{"metric": "decode_tps", "original": 100,
                                                                      "reproduction": 80, "difference": 0.2,
                                                                      "allowed": 0.05, "ok": False}]}],
                                tolerance="t")
    client.force_login(operator)
    urls = ["/runner-hosts/", "/run-requests/", "/run-requests/new/", "/run-requests/new/?host=gpu-a",
            f"/run-requests/{queued.pk}/", f"/run-requests/{running.pk}/", f"/run-requests/{running.pk}/live/",
            f"/runs/{published.pk}/reproduce/", f"/runs/{published.pk}/"]
    for url in urls:
        response = client.get(url)
        assert response.status_code == 200, (url, response.status_code)
        assert_csp_clean(response, url)
    page = client.get(f"/runs/{published.pk}/").content.decode()
    assert "✗ not reproduced" in page
    assert "benchpack/run-live.js" in client.get(f"/run-requests/{running.pk}/").content.decode()
