import pytest

from accounts.models import ApiToken


@pytest.fixture
def token(submitter):
    return ApiToken.issue(submitter, "cli")[1]


def _post(client, archive, token):
    with archive.open("rb") as fh:
        return client.post("/api/v1/submissions/", {"archive": fh}, HTTP_AUTHORIZATION=f"Bearer {token}")


def test_it_accepts_an_upload_with_a_token(client, token, bundle_archive):
    response = _post(client, bundle_archive(), token)
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["state"] == "received"
    status = client.get(f"/api/v1/submissions/{body['id']}/", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert status.json()["id"] == body["id"]


def test_it_answers_a_duplicate_with_the_existing_submission(client, token, bundle_archive):
    archive = bundle_archive()
    first = _post(client, archive, token).json()
    again = _post(client, archive, token)
    assert again.status_code == 409
    assert again.json()["submission"]["id"] == first["id"]


def test_it_refuses_a_revoked_token(client, submitter, bundle_archive):
    token, raw = ApiToken.issue(submitter, "old")
    assert token.revoke() is True
    assert _post(client, bundle_archive(), raw).status_code == 401


def test_it_refuses_anonymous_uploads(client, bundle_archive):
    with bundle_archive().open("rb") as fh:
        assert client.post("/api/v1/submissions/", {"archive": fh}).status_code in (401, 403)


def test_it_stores_only_the_token_hash(submitter):
    token, raw = ApiToken.issue(submitter, "cli")
    assert raw not in (token.token_hash, token.prefix)
    assert raw.startswith(token.prefix)


def test_it_uploads_through_the_benchpack_cli_client(live_server, token, bundle_archive, settings):
    from benchpack.bundles.submit import submit_bundle

    result = submit_bundle(bundle_archive(), live_server.url, token, wait=False)
    assert result.created is True
    assert result.submission["state"] == "received"
