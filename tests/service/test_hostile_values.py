"""Values that crashed the operator's pages: refused at validation when no
reader can take them (NaN, Infinity, 2^70), and survived by the review page,
approve, reject, the public run page and the API when the validator lets them
through (extreme but finite floats, the largest integers, long and odd text)."""

from __future__ import annotations

import io
import json
import tarfile

import pytest

from submissions import states
from submissions.intake import receive_upload
from submissions.review import reject
from tests.service.vouch import approve
from submissions.tasks import validate_submission
from tests.hostile import _put, row, template_bundle


def _archive(bundle) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for path in sorted(bundle.rglob("*")):
            tar.add(path, arcname=path.relative_to(bundle).as_posix(), recursive=False)
    return buffer.getvalue()


def _upload(user, bundle, name="values.tar.gz"):
    submission = receive_upload(user, name, _archive(bundle))
    validate_submission(str(submission.pk))
    submission.refresh_from_db()
    return submission


@pytest.mark.parametrize(
    "hardware, code",
    [(b'{"ram_mb": NaN, "gpus": []}', "json.non-finite"), (b'{"ram_mb": Infinity, "gpus": []}', "json.non-finite"),
     (b'{"ram_mb": 1e400, "gpus": []}', "json.non-finite"),
     # PostgreSQL stores no U+0000 in text or jsonb: approving this failed there
     (b'{"gpus": [], "cpu_model": "a\\u0000b"}', "json.nul-character")],
    ids=["nan", "infinity", "overflow", "nul"],
)
def test_unstorable_hardware_is_refused_at_validation(hardware, code, submitter, tmp_path):
    bundle = template_bundle(tmp_path / "t")
    _put(bundle, "hardware.json", hardware)
    submission = _upload(submitter, bundle)
    assert submission.state == states.INVALID
    assert code in submission.error_codes()


def test_a_repetition_of_two_to_the_seventy_is_refused_at_validation(submitter, tmp_path):
    bundle = template_bundle(tmp_path / "t")
    _put(bundle, "run.jsonl", (json.dumps(row(repetition=2**70)) + "\n").encode())
    submission = _upload(submitter, bundle)
    assert submission.state == states.INVALID and "row.schema" in submission.error_codes()


EXTREME_ROWS = [
    # ids at the edges of their grammar (benchpack/ids.py): odd text goes in fields that are not routed
    row(case="c" * 100, repetition=2**31 - 1, model="m" * 255,
        timing={"wall_s": 1.7e308, "ttft_s": 0.0, "prefill_tps": 5e-324, "decode_tps": 1.7e308, "total_tps": 0},
        tokens={"prompt": 2**53 - 1, "output": 0, "cached_prompt": 2**53 - 1, "source": "usage"},
        backend={"nested": [[[[{"x": -(2**53 - 1)}]]]], "text": "<script>alert(1)</script>"}),
    row(case="unicode", repetition=1, scoring={"mode": "exact", "passed": None},
        error="<b>&amp;\u202e ünïcödé 🙂"),
    row(case="plain", repetition=1, ok=False, timing=None, tokens=None, scoring=None),
]
EXTREME_HARDWARE = {
    "platform": "x" * 10_000, "cpu_model": "<svg onload=alert(1)> " * 50, "ram_mb": 1.7e308, "gpus": [None, 3, "gpu", {"model": ["a"]}],
    "deep": [[[[[[[[[[{"a": None}]]]]]]]]]], "neg": -(2**53 - 1),
}
EXTREME_METADATA = {
    "runtime": {"name": "r" * 128, "version": [{"odd": True}, None, "v" * 1000, 3]},
    "model": {"id": ["list", "not", "string"], "quantization": {"a": 1}},
    "notes": "\u202e right-to-left override and </td></tr></table> and {{ template }}",
}


@pytest.mark.parametrize("field, value, code", [
    ("case", "<b>&amp;\u202e ünïcödé 🙂", "row.case-id"), ("case", "c" * 128, "row.case-id"),
    ("model", "a b", "row.model-id"), ("runtime", "r" * 1000, "metadata.runtime-name")])
def test_ids_outside_the_grammar_are_refused_at_validation(field, value, code, submitter, tmp_path):
    """Once accepted here as "hostile but survivable"; an id outside the grammar is now refused (issue 22 §1)."""
    bundle = template_bundle(tmp_path / "t")
    if field == "runtime":
        _put(bundle, "run-metadata.json", json.dumps({"runtime": {"name": value}}).encode())
    else:
        _put(bundle, "run.jsonl", (json.dumps(row(**{field: value})) + "\n").encode())
    submission = _upload(submitter, bundle)
    assert submission.state == states.INVALID and code in submission.error_codes()


@pytest.mark.parametrize("decision", ["approve", "reject"])
def test_every_operator_page_survives_what_the_validator_lets_through(decision, submitter, operator, client, tmp_path):
    bundle = template_bundle(tmp_path / "t")
    _put(bundle, "run.jsonl", "".join(json.dumps(r) + "\n" for r in EXTREME_ROWS).encode())
    _put(bundle, "hardware.json", json.dumps(EXTREME_HARDWARE).encode())
    _put(bundle, "run-metadata.json", json.dumps(EXTREME_METADATA).encode())
    submission = _upload(submitter, bundle)
    assert submission.state == states.QUARANTINED, submission.validation_report

    client.force_login(operator)
    page = client.get(f"/review/{submission.pk}/")
    assert page.status_code == 200
    assert b"<script>alert(1)" not in page.content and b"<svg onload" not in page.content
    assert client.get("/review/").status_code == 200
    if decision == "approve":
        # Extreme hardware no bound can check: unchecked, so the operator writes a reason first.
        assert client.post(f"/review/{submission.pk}/override-plausibility/",
                           {"reason": "hostile-values test: published to see every page survive"}).status_code == 302
        response = client.post(f"/review/{submission.pk}/approve/")
        assert response.status_code == 302
        submission.refresh_from_db()
        assert submission.state == states.APPROVED
        run = submission.published_runs.get()
        assert len(run.hardware_class) <= 255 and len(run.runtime) <= 255
        client.logout()
        assert client.get(f"/runs/{run.pk}/").status_code == 200
        assert client.get("/").status_code == 200
        assert client.get("/api/v1/runs/").status_code == 200
        assert client.get(f"/api/v1/runs/{run.pk}/").status_code == 200
    else:
        response = client.post(f"/review/{submission.pk}/reject/", {"reason": "odd values"})
        assert response.status_code == 302
        submission.refresh_from_db()
        assert submission.state == states.REJECTED
    client.force_login(submitter)
    assert client.get(f"/submissions/{submission.pk}/").status_code == 200


def test_approve_and_reject_in_code_survive_extreme_values(submitter, operator, tmp_path):
    bundle = template_bundle(tmp_path / "t")
    _put(bundle, "run.jsonl", "".join(json.dumps(r) + "\n" for r in EXTREME_ROWS).encode())
    first = _upload(submitter, bundle)
    _put(bundle, "hardware.json", json.dumps(EXTREME_HARDWARE).encode())
    second = _upload(submitter, bundle, "second.tar.gz")
    assert approve(first.pk, operator) is True
    assert reject(second.pk, operator, "because") is True
