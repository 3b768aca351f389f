"""Hostile uploads through the service: zip slip, links, bombs, wrong types,
oversized, secrets inside. Each ends `invalid` with the specific check code in
the stored report and the email, nothing is written outside the temporary
directory, and no secret is stored or sent."""

from __future__ import annotations

import io
import json
import tarfile
import tempfile

import pytest
from django.core import mail

from submissions import states
from submissions.intake import UploadRefused, receive_upload
from submissions.tasks import validate_submission
from tests.hostile import hostile_cases, snapshot, template_bundle

# The cases that default service limits must catch (cases with custom limits
# test the limit machinery itself and are covered in tests/repo_task/test_hostile_corpus.py).
CASES = [c for c in hostile_cases() if c.bundle_limits is None and c.archive_limits is None]


def _as_upload(case, target) -> tuple[str, bytes, set[str]]:
    """The upload, and the codes that may reject it (a link or FIFO in a bundle
    travels as such in the archive and is stopped at extraction)."""
    if case.kind == "archive":
        return target.name, target.read_bytes(), {case.expected}
    expected = {case.expected}
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for path in sorted(target.rglob("*")):
            if path.is_symlink():
                expected.add("archive.link")
            elif not (path.is_file() or path.is_dir()):
                expected.add("archive.special-file")
            tar.add(path, arcname=path.relative_to(target).as_posix(), recursive=False)
    return "hostile.tar.gz", buffer.getvalue(), expected


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    return template_bundle(tmp_path_factory.mktemp("template"))


@pytest.fixture
def private_tmp(tmp_path, monkeypatch):
    """Point tempfile at a folder of our own, so we can see everything validation writes."""
    folder = tmp_path / "worker-tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_it_rejects_a_hostile_upload_with_its_code(case, template, tmp_path, private_tmp, submitter):
    sandbox = tmp_path / "sandbox"
    sandbox.mkdir()
    name, data, expected = _as_upload(case, case.build(sandbox, template))
    before = snapshot(tmp_path)
    try:
        submission = receive_upload(submitter, name, data)
    except UploadRefused as refused:  # refused at the door (e.g. an empty file's type is fine, size is not)
        assert refused.status in (400, 413)
        return
    assert validate_submission(str(submission.pk)) == states.INVALID
    submission.refresh_from_db()
    assert expected & {f["code"] for f in submission.validation_report["findings"]}
    assert not submission.files.exists()
    assert snapshot(tmp_path) == before, "validation wrote outside its temporary directory"
    assert list(private_tmp.iterdir()) == []
    if case.secret:
        assert case.secret not in json.dumps(submission.validation_report)
        assert all(case.secret not in m.body for m in mail.outbox)


def test_it_refuses_wrong_types_and_oversized_uploads_at_the_door(submitter, settings):
    with pytest.raises(UploadRefused, match=r"\.tar\.gz or \.zip"):
        receive_upload(submitter, "bundle.7z", b"7z\xbc\xaf")
    settings.SUBMISSION_MAX_BYTES = 1000
    with pytest.raises(UploadRefused, match="1000-byte limit"):
        receive_upload(submitter, "bundle.tar.gz", b"\x1f\x8b" + b"\0" * 2000)
