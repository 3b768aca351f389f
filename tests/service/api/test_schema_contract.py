"""The API answers what its schema says, errors included (issue 22 §4): each case here was a 500 or a
schema mismatch that Schemathesis found; tests/service/api/test_schemathesis.py runs Schemathesis itself."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.django_db

SHAPE = {"error", "status", "code"}


def _error(response, status):
    assert response.status_code == status, (response.status_code, response.content[:300])
    assert response["Content-Type"].startswith("application/json"), response["Content-Type"]
    body = response.json()
    assert SHAPE <= set(body) <= SHAPE | {"fields"}, body
    return body


@pytest.mark.parametrize("url, parameter", [
    ("/api/v1/runs/?model=%25", "model"),
    ("/api/v1/runs/?model=%25s%25d", "model"),
    ("/api/v1/cases/?pack=%25", "pack"),
    ("/api/v1/runs/?runtime=100%25", "runtime"),
])
def test_a_percent_sign_in_a_filter_value_is_a_400_naming_it(client, catalogue, url, parameter):
    body = _error(client.get(url), 400)
    assert parameter in body["fields"]


def test_a_leaderboard_index_page_past_the_end_is_a_404(client, catalogue):
    body = _error(client.get("/api/v1/leaderboards/?page=2"), 404)
    assert "past the last page" in body["error"]


@pytest.mark.parametrize("url", ["/api/v1/leaderboards/smoke-chat/?format=csv", "/api/v1/leaderboards/?format=csv",
                                 "/api/v1/runs/?format=csv"])
def test_options_with_a_format_answers_without_a_server_error(client, catalogue, url):
    response = client.options(url)
    assert response.status_code < 500, response.content[:300]


def test_an_empty_order_is_refused_as_the_schema_says(client, catalogue):
    assert "order" in _error(client.get("/api/v1/runs/?order="), 400)["fields"]


def test_a_deeply_nested_json_body_is_a_400(client, make_user):
    from accounts.models import ApiToken

    secret = ApiToken.issue(make_user("deep@example.org", verified=False), "deep")[1]
    body = "[" * 1500 + "]" * 1500
    response = client.post("/api/v1/run-requests/", body, content_type="application/json",
                           HTTP_AUTHORIZATION=f"Bearer {secret}")
    assert response.status_code == 400, response.content[:300]


def test_every_page_links_the_api_docs_from_its_footer(client):
    for url in ("/", "/leaderboards/"):
        page = client.get(url).content.decode()
        footer = page[page.index("<footer"):]
        assert 'href="/api-docs/"' in footer and 'href="/api/v1/schema/"' in footer, url


def test_the_readme_links_the_api_docs():
    from pathlib import Path

    assert "/api-docs/" in (Path(__file__).resolve().parents[3] / "README.md").read_text()


def test_a_post_with_a_session_cookie_to_no_api_endpoint_is_a_json_404_not_a_csrf_page(make_user):
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    client.force_login(make_user("cookie@example.org"))
    response = client.post("/api/v1/run-requests/null,null/cancel/")
    _error(response, 404)


def test_a_failed_csrf_check_under_the_api_is_json(make_user):
    from django.test import Client, RequestFactory

    from registry_site.catalogue.api.errors import csrf_failure

    response = csrf_failure(RequestFactory().post("/api/v1/anything/"), "CSRF cookie not set.")
    assert response.status_code == 403 and json.loads(response.content)["code"] == "permission_denied"


def test_a_whole_number_written_as_25_0_is_an_integer_in_a_run_request(client, make_user):
    """JSON Schema (and the API schema) call 25.0 an integer: the API reads it as one, so the refusal is about
    the unknown host, not the number's spelling."""
    from accounts.models import ApiToken

    secret = ApiToken.issue(make_user("num@example.org"), "num")[1]
    body = {"host": "nohost", "endpoint": "e", "model": "m", "pack": "p", "repetitions": 25.0}
    response = client.post("/api/v1/run-requests/", json.dumps(body), content_type="application/json",
                           HTTP_AUTHORIZATION=f"Bearer {secret}")
    assert "no enabled runner host named 'nohost'" in _error(response, 400)["error"]


def test_a_nul_in_a_run_request_field_is_a_400_on_every_database(client, make_user):
    """Schemathesis on PostgreSQL: a host name holding U+0000 reached the query and PostgreSQL refused it (500)."""
    from accounts.models import ApiToken

    secret = ApiToken.issue(make_user("nul@example.org"), "nul")[1]
    body = {"host": "a\x00b", "endpoint": "e", "model": "m", "pack": "p"}
    response = client.post("/api/v1/run-requests/", json.dumps(body), content_type="application/json",
                           HTTP_AUTHORIZATION=f"Bearer {secret}")
    assert "host must not contain NUL characters" in _error(response, 400)["error"]
