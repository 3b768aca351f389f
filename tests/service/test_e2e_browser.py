"""The whole flow in a real browser against granian + a real Celery worker over Redis.

sign up → verification link from the outbox → upload → validated by the
worker → operator approves → visible to an anonymous visitor; and the
rejection path. Needs Debian's chromium (`.ci/run` installs it).
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest

from tests.service.live import start_live_service
from tests.environment import unavailable

CHROMIUM = Path("/usr/bin/chromium")
pytestmark = [pytest.mark.e2e, pytest.mark.slow]


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    service, stop = start_live_service(tmp_path_factory.mktemp("live"))
    service.manage("make_operator", "ops@example.org", "--create", "--password", "ops-password-123")
    yield service
    stop()


@pytest.fixture(scope="module")
def browser():
    if not CHROMIUM.exists():
        unavailable("Debian chromium is not installed (.ci/run installs it: apt-get install -y chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM),
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                  "--disable-sync", "--no-first-run"],
        )
        yield browser
        browser.close()


def _verification_link(live, email: str) -> str:
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        for message in live.emails():
            if email in message:
                match = re.search(r"(http://\S+/accounts/confirm-email/\S+/)", message)
                if match:
                    return match.group(1)
        time.sleep(0.2)
    raise AssertionError(f"no verification email for {email}: {live.emails()}")


def _sign_up(browser, live, email: str):
    page = browser.new_context().new_page()
    page.goto(live.url + "/accounts/signup/")
    page.fill("input[name=email]", email)
    page.fill("input[name=password1]", "a long enough passphrase 42")
    page.fill("input[name=password2]", "a long enough passphrase 42")
    page.click("form button[type=submit]")
    page.goto(_verification_link(live, email))
    page.click("form button[type=submit]")  # "Confirm"
    return page


def _upload(page, live, archive: Path) -> str:
    page.goto(live.url + "/submissions/new/")
    page.set_input_files("input[name=archive]", str(archive))
    page.click("main form button[type=submit]")
    page.wait_for_url(re.compile(r"/submissions/[0-9a-f-]{36}/$"))
    return page.url.rstrip("/").rsplit("/", 1)[-1]


def _wait_for_text(page, text: str, timeout_s: float = 60) -> None:
    page.wait_for_selector(f"text={text}", timeout=timeout_s * 1000)


def _operator(browser, live):
    page = browser.new_context().new_page()
    page.goto(live.url + "/accounts/login/")
    page.fill("input[name=login]", "ops@example.org")
    page.fill("input[name=password]", "ops-password-123")
    page.click("form button[type=submit]")
    return page


def test_it_takes_a_bundle_from_sign_up_to_public(live, browser, bundle_archive, tmp_path):
    submitter = _sign_up(browser, live, "carol@example.org")
    submission_id = _upload(submitter, live, bundle_archive("2026-04-29-llama-server-runtime"))
    _wait_for_text(submitter, "Quarantined")  # the page polls while the worker validates

    operator = _operator(browser, live)
    operator.goto(live.url + "/review/")
    operator.click(f"a[href='/review/{submission_id}/']")
    # A click that navigates returns before the next page has loaded: wait for its text.
    _wait_for_text(operator, "prefill parity")
    operator.screenshot(path=str(tmp_path / "review.png"), full_page=True)
    record_override_if_asked(operator, "a real run on an Apple M5 Max, checked by hand")
    operator.click("#approve")
    _wait_for_text(operator, "Approved and published.")

    visitor = browser.new_context().new_page()
    visitor.goto(live.url + "/")
    visitor.click("text=runtime-sweep 0.1.0")
    _wait_for_text(visitor, "qwen2.5-0.5b-instruct-q4_k_m")
    live.wait_for_email("Submission approved")  # queued with the decision, delivered by the worker


def test_it_keeps_a_rejected_bundle_private(live, browser, bundle_archive):
    submitter = _sign_up(browser, live, "dave@example.org")
    submission_id = _upload(submitter, live, bundle_archive("2026-04-28-mlx-lm-smoke"))
    _wait_for_text(submitter, "Quarantined")

    operator = _operator(browser, live)
    operator.goto(f"{live.url}/review/{submission_id}/")
    operator.fill("form:has(#reject) textarea[name=reason]", "no run metadata: runtime and quantization unknown")
    operator.click("#reject")
    _wait_for_text(operator, "Rejected; the submitter has been told why.")

    visitor = browser.new_context().new_page()
    visitor.goto(live.url + "/")
    assert "mlx-community/Qwen2.5-0.5B-Instruct-4bit" not in visitor.content()
    assert visitor.goto(f"{live.url}/submissions/{submission_id}/").url.startswith(live.url + "/accounts/login/")
    submitter.goto(f"{live.url}/submissions/{submission_id}/")
    assert "no run metadata: runtime and quantization unknown" in submitter.content()


def record_override_if_asked(page, reason: str) -> None:
    """An unchecked or implausible run cannot be approved until an operator writes why (issue 30 item 4):
    the review page then shows the override form, and the operator fills it in first, as a person would."""
    form = page.query_selector("#override-plausibility")
    if form is None:
        return
    page.fill("#override-plausibility textarea[name=reason]", reason)
    page.click("#override-plausibility button[type=submit]")
    page.wait_for_selector("#plausibility-override", timeout=60_000)
