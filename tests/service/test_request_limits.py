"""Request bodies are refused by Content-Length before they are read, and file
parts are stopped while they stream, on every view (limit + 1 bytes each).
tests/service/test_e2e_faults.py repeats the first through real granian with a
declared 400 MiB body that is never sent."""

from __future__ import annotations

import io

import pytest

from accounts.models import ApiToken
from submissions.models import Submission


@pytest.fixture
def small_limits(settings):
    settings.REQUEST_MAX_BYTES = 4096
    settings.SUBMISSION_MAX_BYTES = 10_000
    return settings


def _multipart(fields: dict[str, bytes], files: dict[str, tuple[str, bytes]], boundary="bp-boundary") -> bytes:
    parts = []
    for name, value in fields.items():
        parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n'.encode() + value + b"\r\n")
    for name, (filename, data) in files.items():
        parts.append(
            f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"; filename="{filename}"\r\n'
            f"Content-Type: application/gzip\r\n\r\n".encode() + data + b"\r\n"
        )
    return b"".join(parts) + f"--{boundary}--\r\n".encode()


def test_an_anonymous_post_to_the_login_page_over_the_limit_is_refused_unread(client, small_limits):
    body = _multipart({"login": b"a@example.org"}, {"junk": ("big.bin", b"x" * 4096)})
    assert len(body) > small_limits.REQUEST_MAX_BYTES
    response = client.generic("POST", "/accounts/login/", body, content_type="multipart/form-data; boundary=bp-boundary")
    assert response.status_code == 413
    assert b"accepts at most 4096" in response.content


def test_exactly_limit_plus_one_bytes_is_refused_and_the_limit_itself_is_not(client, small_limits, db):
    limit = small_limits.REQUEST_MAX_BYTES
    over = client.generic("POST", "/accounts/login/", b"x" * (limit + 1), content_type="application/x-www-form-urlencoded")
    at = client.generic("POST", "/accounts/login/", b"x" * limit, content_type="application/x-www-form-urlencoded")
    assert over.status_code == 413
    assert at.status_code != 413


def test_an_api_upload_one_byte_over_is_stopped_while_streaming(submitter, client, small_limits):
    _, token = ApiToken.issue(submitter, "t")
    data = b"\x1f\x8b" + b"\0" * (small_limits.SUBMISSION_MAX_BYTES - 1)  # limit + 1 bytes
    response = client.post("/api/v1/submissions/", {"archive": io.BytesIO(data)}, HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 413
    assert "10000-byte limit" in response.json()["error"]
    assert not Submission.objects.exists()


def test_an_api_upload_whose_content_length_is_over_is_refused_unread(submitter, client, small_limits):
    _, token = ApiToken.issue(submitter, "t")
    body = _multipart({}, {"archive": ("b.tar.gz", b"\x1f\x8b" + b"\0" * 80_000)})
    response = client.generic("POST", "/api/v1/submissions/", body, content_type="multipart/form-data; boundary=bp-boundary",
                              HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 413
    assert "archives may be at most 10000 bytes" in response.json()["error"]


def test_a_form_upload_one_byte_over_gets_a_413_page(submitter, client, small_limits):
    client.force_login(submitter)
    data = io.BytesIO(b"\x1f\x8b" + b"\0" * (small_limits.SUBMISSION_MAX_BYTES - 1))
    data.name = "big.tar.gz"
    response = client.post("/submissions/new/", {"archive": data})
    assert response.status_code == 413
    assert b"10000-byte limit" in response.content
    assert not Submission.objects.exists()


def test_a_file_sent_to_a_page_that_takes_none_is_dropped(client, small_limits, make_user):
    make_user("bob@example.org", password="correct horse battery")
    body = _multipart({"login": b"bob@example.org", "password": b"correct horse battery"}, {"junk": ("f.bin", b"y" * 100)})
    response = client.generic("POST", "/accounts/login/", body, content_type="multipart/form-data; boundary=bp-boundary")
    assert response.status_code in (200, 302)
    assert response.wsgi_request._upload_refusal == "this page does not accept file uploads"
