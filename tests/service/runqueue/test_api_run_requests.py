"""POST/GET /api/v1/run-requests/: queue by allowlist names only; refusals are {"error": ...}."""

from __future__ import annotations

import pytest

from submissions.runqueue.models import RunRequest


@pytest.fixture
def api(client, operator):
    from accounts.models import ApiToken

    _, token = ApiToken.issue(operator, "test")
    client.defaults["HTTP_AUTHORIZATION"] = f"Bearer {token}"
    return client


def _post(api, body):
    return api.post("/api/v1/run-requests/", body, content_type="application/json")


def test_it_queues_a_request_and_returns_it(api, host):
    response = _post(api, {"host": "gpu-a", "endpoint": "ref", "model": "scripted-demo", "pack": "smoke-chat",
                           "repetitions": 2})
    assert response.status_code == 201
    body = response.json()
    assert body["state"] == "queued" and body["host"] == "gpu-a" and body["pack"] == {"id": "smoke-chat", "version": "0.1.0"}
    assert body["options"] == {"openai_stream_usage": "include", "repetitions": 2, "time_limit_s": 7200}
    assert body["progress"] == {"done": 0, "total": 0, "current": ""}
    assert RunRequest.objects.filter(pk=body["id"]).exists()
    listed = api.get("/api/v1/run-requests/").json()
    assert [r["id"] for r in listed] == [body["id"]]


@pytest.mark.parametrize("body, status, message", [
    ({"host": "gpu-a", "endpoint": "ref", "model": "scripted-demo", "pack": "smoke-chat",
      "endpoint_url": "http://10.0.0.1/"}, 400, "a URL is never accepted"),
    ({"host": "gpu-a", "endpoint": "http://127.0.0.1:6379/", "model": "scripted-demo", "pack": "smoke-chat"}, 400,
     "endpoints are chosen by name, never by URL"),
    ({"host": "gpu-a", "endpoint": "ref", "model": "scripted-demo"}, 400, "missing field(s): pack"),
    ({"host": "gpu-a", "endpoint": "ref", "model": "scripted-demo", "pack": "smoke-chat", "repetitions": "3"}, 400,
     "repetitions must be an integer"),
    ([1, 2], 400, "send a JSON object"),
])
def test_it_refuses_bad_bodies_with_one_error(api, host, body, status, message):
    response = _post(api, body)
    assert response.status_code == status
    assert message in response.json()["error"]
    assert not RunRequest.objects.exists()


def test_it_refuses_a_submitter_who_owns_no_host(client, host, submitter):
    from accounts.models import ApiToken

    _, token = ApiToken.issue(submitter, "t")
    response = client.post("/api/v1/run-requests/", {"host": "gpu-a", "endpoint": "ref", "model": "scripted-demo",
                                                     "pack": "smoke-chat"},
                           content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 403 and "only operators and the owner" in response.json()["error"]
    assert client.get("/api/v1/run-requests/", HTTP_AUTHORIZATION=f"Bearer {token}").json() == []


def test_it_needs_a_login(client, host):
    assert client.get("/api/v1/run-requests/").status_code in (401, 403)
