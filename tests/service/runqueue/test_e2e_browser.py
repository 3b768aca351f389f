"""The run queue in a real browser (Debian chromium) against granian, the validation
worker and a runner worker over Redis:

an operator opens a published run → Reproduce → picks the matching host → watches
the request's progress → the result appears in the review queue → approves → the
public run shows the reproduced badge.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from benchpack.refserver.server import RefServer
from tests.service.live import start_live_service
from tests.service.test_e2e_browser import browser, record_override_if_asked  # noqa: F401 (the same Debian chromium fixture)
from tests.service.runqueue.live_runners import MODEL, OPS, RunnerWorker, register, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
REPLY = "The capital of France is Paris, and this scripted reply is long enough to time."
# ~0.5 s per execution: progress is there to watch, and jitter stays inside the tolerance.
TIMING = {"ttft_s": 0.2, "itl_s": 0.02}


@pytest.fixture(scope="module")
def setting(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("runqueue-browser")
    with RefServer(responses=[REPLY], **TIMING) as ref:
        live, stop = start_live_service(tmp, redis_db=13)
        # Someone else measured runtime-sweep by hand on their machine `lab-box` and uploaded it.
        original = _publish_by_hand(live, ref, tmp)
        runner = RunnerWorker(live, "gpu-a", "gpu-a")
        try:
            yield live, original, runner
        finally:
            runner.stop()
            stop()


def _publish_by_hand(live, ref, tmp: Path) -> int:
    from benchpack.bundles.archives import pack_archive
    from benchpack.bundles.create import create_bundle
    from benchpack.packs.loader import load_pack, resolve_pack_path
    from benchpack.run.runner import RunOptions, run_pack

    out = tmp / "runtime-sweep-lab-box"
    run_pack(load_pack(resolve_pack_path("runtime-sweep")), RunOptions(
        adapter="openai-chat", model=MODEL, endpoint=ref.url + "/v1", out=out, host_label="lab-box",
        run_metadata={"runtime": {"name": "benchpack-refserver", "version": "scripted"}, "model": {"quantization": "none"}}))
    archive = pack_archive(create_bundle([out], tmp / "bundle", "self-reported"), tmp / "runtime-sweep-lab-box.tar.gz")
    carol = (
        "from django.contrib.auth import get_user_model; from allauth.account.models import EmailAddress\n"
        "from accounts.models import ApiToken\n"
        "carol = get_user_model().objects.create_user(username='carol@example.org', email='carol@example.org')\n"
        "EmailAddress.objects.create(user=carol, email='carol@example.org', verified=True, primary=True)\n"
        "print('CAROL', ApiToken.issue(carol, 'upload')[1])\n"
    )
    output = live.manage("shell", "-c", carol)
    live.token = register(live, ref.url, ("gpu-a",))
    carol_token = output.split("CAROL ")[1].split()[0]
    with archive.open("rb") as fh, live.api(carol_token) as api:
        submission = api.post("/api/v1/submissions/", files={"archive": (archive.name, fh)}).json()
    live.wait_for_state(carol_token, submission["id"], {"quarantined"}, timeout_s=60)
    live.manage("shell", "-c", "from tests.service.vouch import approve; from django.contrib.auth import get_user_model;"
                f"assert approve('{submission['id']}', get_user_model().objects.get(email='{OPS}'))")
    with live.api(live.token) as api:
        return next(r["id"] for r in api.get("/api/v1/runs/").json()["results"] if r["pack_id"] == "runtime-sweep")


def _wait_for_text(page, text: str, timeout_s: float = 60) -> None:
    page.wait_for_selector(f"text={text}", timeout=timeout_s * 1000)


def test_an_operator_reproduces_a_run_and_the_badge_appears(setting, browser, tmp_path):
    live, original, runner = setting
    with live.api(live.token) as api:  # the worker reports this machine's hardware class as it starts
        wait_until(lambda: any(h["online"] and h["hardware_class"] for h in api.get("/api/v1/runner-hosts/").json()),
                   timeout_s=90, what="gpu-a online with its hardware")

    page = browser.new_context().new_page()
    page.goto(live.url + "/accounts/login/")
    page.fill("input[name=login]", OPS)
    page.fill("input[name=password]", "ops-password-123")
    page.click("form button[type=submit]")
    page.wait_for_url(re.compile(r"/submissions/$"))

    page.goto(f"{live.url}/runs/{original}/")
    page.click("#reproduce")
    _wait_for_text(page, "Queue reproduction")
    assert page.is_checked("input[value='gpu-a|ref']")
    page.click("#queue-reproduction")
    page.wait_for_url(re.compile(r"/run-requests/[0-9a-f-]{36}/$"))
    _wait_for_text(page, "Reproduction of run")

    # Live progress: the page polls its fragment; catch it mid-run.
    page.wait_for_function(
        "() => { const p = document.querySelector('#run-progress');"
        " return p && p.value > 0 && p.value < p.max; }", timeout=90_000)
    page.screenshot(path=str(tmp_path / "progress.png"), full_page=True)
    assert re.search(r"\d+/12 executions", page.content())
    _wait_for_text(page, "Quarantined (awaiting review)", timeout_s=90)  # the page reloads once settled

    page.goto(live.url + "/review/")
    page.click("main table a[href^='/review/']")  # the new submission, waiting in the queue
    _wait_for_text(page, "prefill parity")
    record_override_if_asked(page, "scripted endpoint: demo data, no model to judge")
    page.click("#approve")
    _wait_for_text(page, "Approved and published.")

    visitor = browser.new_context().new_page()
    visitor.goto(f"{live.url}/runs/{original}/")
    _wait_for_text(visitor, "✓ reproduced")
    visitor.screenshot(path=str(tmp_path / "badge.png"), full_page=True)
    content = visitor.content()
    assert "different owner on a different host" in content
    assert "Reproduce on a matching host" not in content  # operators only
    assert runner.proc.poll() is None
