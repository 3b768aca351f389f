"""Every page sends a strict Content-Security-Policy and satisfies it: no inline
script, no inline style (attributes included), no event-handler attributes."""

from __future__ import annotations

import re

import pytest
from django.test import override_settings

from submissions import states
from submissions.models import Submission

INLINE_SCRIPT = re.compile(rb"<script(?![^>]*\bsrc=)[^>]*>", re.I)
INLINE_STYLE = re.compile(rb"<style\b|\sstyle\s*=", re.I)
EVENT_HANDLER = re.compile(rb"\son[a-z]+\s*=", re.I)


def assert_csp_clean(response, url):
    policy = response.headers.get("Content-Security-Policy", "")
    assert "default-src 'none'" in policy and "script-src 'self'" in policy and "style-src 'self'" in policy, url
    assert "unsafe-inline" not in policy and "unsafe-eval" not in policy, url
    body = response.content
    assert not INLINE_SCRIPT.search(body), f"{url}: inline <script>"
    assert not INLINE_STYLE.search(body), f"{url}: inline style: {INLINE_STYLE.search(body).group(0)!r}"
    assert not EVENT_HANDLER.search(body), f"{url}: event handler attribute"


@pytest.fixture
def site_with_data(submit, bundle_archive, operator, make_user):
    from tests.service.vouch import approve
    from submissions.tasks import validate_submission

    published = submit(bundle_archive("2026-04-29-llama-server-runtime"))
    validate_submission(str(published.pk))
    approve(published.pk, operator)
    quarantined = submit(bundle_archive("2026-04-29-llama-server-smoke"))
    validate_submission(str(quarantined.pk))
    waiting = submit(bundle_archive("2026-04-28-mlx-lm-smoke"))  # stays `received`: its page polls
    assert Submission.objects.get(pk=waiting.pk).state == states.RECEIVED
    run = published.published_runs.get()
    return {"run": run, "quarantined": quarantined, "waiting": waiting}


@override_settings(DEBUG=False)
def test_every_page_satisfies_the_policy(client, site_with_data, submitter, operator, django_user_model):
    run, quarantined, waiting = site_with_data["run"], site_with_data["quarantined"], site_with_data["waiting"]
    anonymous = ["/", f"/runs/{run.pk}/", "/accounts/login/", "/accounts/signup/", "/accounts/password/reset/",
                 "/no/such/page/"]
    own = ["/submissions/", "/submissions/new/", f"/submissions/{waiting.pk}/", f"/submissions/{quarantined.pk}/",
           "/accounts/tokens/", "/accounts/email/", "/accounts/password/change/"]
    review = ["/review/", f"/review/{quarantined.pk}/"]
    checked = 0
    for user, urls in ((None, anonymous), (submitter, own), (operator, review)):
        client.logout()
        if user is not None:
            client.force_login(user)
        for url in urls:
            response = client.get(url)
            assert response.status_code in (200, 404), (url, response.status_code)
            assert_csp_clean(response, url)
            checked += 1
    admin = django_user_model.objects.create_superuser("root@example.org", "root@example.org", "a long passphrase 1")
    client.force_login(admin)
    for url in ("/admin/", "/admin/auth/user/", f"/admin/auth/user/{admin.pk}/change/"):
        response = client.get(url)
        assert response.status_code == 200, url
        assert_csp_clean(response, url)
        checked += 1
    assert checked == 18
    # the polling page loads its script from a static file
    client.force_login(submitter)
    assert b"benchpack/status-poll.js" in client.get(f"/submissions/{waiting.pk}/").content


def test_the_not_found_page_is_the_sites_own(client, db):
    with override_settings(DEBUG=False):
        response = client.get("/no/such/page/")
    assert response.status_code == 404
    assert b"Benchpack registry" in response.content and b"URLconf" not in response.content
