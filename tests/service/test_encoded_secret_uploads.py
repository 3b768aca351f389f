"""Issue 30 item 9 through the registry: an upload whose key is encoded (base32, HTML references,
look-alikes, escapes) or split across two rows is refused, the finding names file, field and
encoding without the key, and the archive's bytes are not kept."""

from __future__ import annotations

import base64
import json

import pytest

from submissions import states
from submissions.intake import receive_upload
from submissions.tasks import validate_submission
from tests.service.test_validation_faults import _tar_of_bundle

KEY = "sk-proj-" + "Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2"  # built by concatenation: this file holds no key

ROWS = {
    "base32": ([{"notes": base64.b32encode(KEY.encode()).decode()}], "hidden as base32 in field /notes"),
    "html-references": ([{"notes": "".join(f"&#{ord(c)};" for c in KEY)}], "hidden as HTML character references in field /notes"),
    "cyrillic": ([{"notes": KEY.replace("o", "\u043e").replace("p", "\u0440")}], "hidden as look-alike characters in field /notes"),
    "octal-escapes": ([{"notes": "".join(f"\\{ord(c):03o}" for c in KEY)}], "hidden as backslash escapes"),
    "split-across-rows": ([{"prompt": "use " + KEY[:10]}, {"prompt": KEY[10:]}], "split across fields /prompt and /prompt of the next row"),
}


@pytest.mark.parametrize("name", sorted(ROWS))
def test_an_encoded_or_split_key_is_refused_named_and_its_archive_not_kept(name, submitter, tmp_path):
    from tests.hostile import _put, row, template_bundle

    extras, wording = ROWS[name]
    bundle = template_bundle(tmp_path / "t")
    rows = [row(repetition=index + 1, **extra) for index, extra in enumerate(extras)]
    _put(bundle, "run.jsonl", "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode())
    submission = receive_upload(submitter, f"{name}.tar.gz", _tar_of_bundle(bundle))
    assert validate_submission(str(submission.pk)) == states.INVALID
    submission.refresh_from_db()
    assert submission.error_codes() == ["secret.openai-key"]
    findings = json.dumps(submission.validation_report, ensure_ascii=False)
    assert wording in findings and "run.jsonl" in findings
    assert KEY[-12:] not in findings and KEY[8:20] not in findings
    assert bytes(submission.archive) == b""
