"""Upload limits before the body is read (issue 22 §3, submissions/upload_gate.py): a user over the hourly
limit, or with as many uploads in progress as the cap allows, gets 429 and not a byte of the archive is
read; a finished upload gives its slot back; large archives stream to a temporary file, not memory."""

from __future__ import annotations

import pytest
from django.core.cache import cache
from django.core.files.uploadhandler import FileUploadHandler

READ: list[str] = []


class RecordingHandler(FileUploadHandler):
    """First in the chain: notes every file part the server starts to read."""

    def new_file(self, field_name, *args, **kwargs):
        READ.append(field_name)
        super().new_file(field_name, *args, **kwargs)

    def receive_data_chunk(self, raw_data, start):
        return raw_data

    def file_complete(self, file_size):
        return None


@pytest.fixture
def recording(settings):
    READ.clear()
    cache.clear()
    settings.FILE_UPLOAD_HANDLERS = ["tests.service.test_upload_gate.RecordingHandler", *settings.FILE_UPLOAD_HANDLERS]
    yield READ
    cache.clear()


@pytest.fixture
def token(submitter):
    from accounts.models import ApiToken

    return ApiToken.issue(submitter, "t")[1]


def _post(client, token, archive):
    with archive.open("rb") as fh:
        return client.post("/api/v1/submissions/", {"archive": fh}, HTTP_AUTHORIZATION=f"Bearer {token}")


def test_over_the_hourly_limit_the_body_is_never_read(client, token, bundle_archive, recording, settings):
    settings.SUBMISSION_RATE_LIMIT_PER_HOUR = 1
    assert _post(client, token, bundle_archive("2026-04-29-llama-server-smoke")).status_code == 201
    assert recording == ["archive"]
    refused = _post(client, token, bundle_archive("2026-04-28-mlx-lm-smoke"))
    assert refused.status_code == 429 and "the limit is 1" in refused.json()["error"]
    assert recording == ["archive"]  # the second archive was refused unread


def test_past_the_concurrent_cap_the_body_is_never_read_and_slots_come_back(client, token, submitter,
                                                                            bundle_archive, recording, settings):
    settings.SUBMISSION_MAX_CONCURRENT_UPLOADS = 2
    cache.set(f"uploads_in_flight_{submitter.pk}", 2, 60)  # two uploads of this user are being received
    archive = bundle_archive()
    refused = _post(client, token, archive)
    assert refused.status_code == 429 and "2 uploads in progress" in refused.json()["error"]
    assert refused["Retry-After"] == "60"
    assert recording == []
    assert cache.get(f"uploads_in_flight_{submitter.pk}") == 2  # a refusal takes no slot
    cache.set(f"uploads_in_flight_{submitter.pk}", 1, 60)  # one finished
    assert _post(client, token, archive).status_code == 201
    assert cache.get(f"uploads_in_flight_{submitter.pk}") == 1  # taken for the request, given back after


def test_the_web_form_is_gated_before_csrf_reads_the_body(client, submitter, bundle_archive, recording, settings):
    settings.SUBMISSION_MAX_CONCURRENT_UPLOADS = 1
    client.force_login(submitter)
    cache.set(f"uploads_in_flight_{submitter.pk}", 1, 60)
    with bundle_archive().open("rb") as fh:
        refused = client.post("/submissions/new/", {"archive": fh})
    assert refused.status_code == 429 and b"uploads in progress" in refused.content
    assert recording == []


def test_a_large_archive_streams_to_a_temporary_file(settings):
    from django.core.files.uploadhandler import TemporaryFileUploadHandler

    assert settings.FILE_UPLOAD_MAX_MEMORY_SIZE <= 2_621_440 < settings.SUBMISSION_MAX_BYTES
    assert any(h.endswith("TemporaryFileUploadHandler") for h in settings.FILE_UPLOAD_HANDLERS)
    assert TemporaryFileUploadHandler  # the handler that takes what memory does not
