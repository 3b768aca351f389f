"""/api/v1/schema/ and the docs page: local assets only, and the site's CSP holds in a real browser."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from django.test import override_settings

from tests.service.test_csp import assert_csp_clean
from tests.environment import needs, unavailable

CHROMIUM = Path("/usr/bin/chromium")


def test_schema_is_openapi_json_listing_the_catalogue(client, db):
    response = client.get("/api/v1/schema/")
    assert response.status_code == 200 and "json" in response["Content-Type"]
    schema = response.json()
    assert schema["openapi"].startswith("3.")
    assert "/api/v1/runs/" in schema["paths"]
    # the token-only APIs are documented too (issue 22 §4), with their bearer-token security
    for path in ("/api/v1/submissions/", "/api/v1/submissions/{id}/", "/api/v1/run-requests/",
                 "/api/v1/run-requests/{id}/", "/api/v1/run-requests/{id}/cancel/", "/api/v1/runner-hosts/"):
        assert path in schema["paths"], path
    upload = schema["paths"]["/api/v1/submissions/"]["post"]
    assert "archive" in upload["requestBody"]["content"]["multipart/form-data"]["schema"]["properties"]
    assert {"201", "401", "409", "413"} <= set(upload["responses"])
    assert schema["components"]["securitySchemes"]["apiToken"]["scheme"] == "bearer"
    # public endpoints first, each with a one-line summary; the runner-host API last (issue 32 item 8)
    paths = list(schema["paths"])
    tags = [next(iter(schema["paths"][p].values()))["tags"][0] for p in paths]
    assert tags[0] == "public catalogue" and tags[-1] == "runner hosts", tags
    assert tags == sorted(tags, key=["public catalogue", "submissions", "run requests", "runner hosts"].index)
    assert [t["name"] for t in schema["tags"]][0] == "public catalogue"
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            assert operation.get("summary"), (method, path)


@override_settings(DEBUG=False)
def test_docs_page_has_no_inline_code_and_no_remote_assets(client, db):
    page = client.get("/api-docs/")
    assert page.status_code == 200
    assert_csp_clean(page, "/api-docs/")
    assert not re.search(rb"""(src|href)=["']?(https?:)?//""", page.content), "a remote asset on the docs page"
    script = client.get("/api-docs/?script=")
    assert script.status_code == 200 and "javascript" in script["Content-Type"]
    assert b"/api/v1/schema/" in script.content


@pytest.mark.slow
def test_docs_page_renders_the_schema_under_the_csp_in_chromium(live_server, db):
    if not CHROMIUM.exists():
        unavailable("Debian chromium is not installed (.ci/run installs it: apt-get install -y chromium)")
    from playwright.sync_api import sync_playwright

    problems, requested = [], []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page()
            page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: problems.append(str(e)))
            page.on("request", lambda r: requested.append(r.url))
            page.goto(f"{live_server.url}/api-docs/")
            page.wait_for_selector("text=Benchpack registry API", timeout=15_000)
            page.wait_for_selector("text=/api/v1/runs/", timeout=15_000)
        finally:
            browser.close()
    assert not [p for p in problems if "Content Security Policy" in p or "Refused" in p], problems
    assert all(url.startswith(live_server.url) or url.startswith("data:") for url in requested), requested
