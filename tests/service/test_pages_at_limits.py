"""A run at the per-run limits (SUBMISSION_MAX_CASES_PER_RUN distinct cases)
keeps the review page, the public run page and /api/v1/runs/ small and fast:
pages show 100 cases at a time and the fingerprints are computed in one pass.
One past the limit is refused at validation."""

from __future__ import annotations

import io
import json
import random
import re
import tarfile
import time

import pytest

from submissions import states
from submissions.intake import receive_upload
from submissions.tasks import validate_submission
from tests.hostile import _put, row, template_bundle

pytestmark = pytest.mark.slow


def _archive_with_cases(tmp_path, cases: int, reps: int = 1) -> bytes:
    bundle = template_bundle(tmp_path / f"t{cases}")
    noise = random.Random(cases)  # measured timings differ row to row, as real ones do (and compress ~10x, not ~200x)
    rows = [
        row(case=f"case-{c:05d}", repetition=r + 1, patch=None, raw=None,
            timing={k: noise.uniform(0.01, 500) for k in ("wall_s", "ttft_s", "prefill_tps", "decode_tps", "total_tps")},
            tokens={"prompt": noise.randrange(10, 5000), "output": noise.randrange(1, 900), "cached_prompt": 0, "source": "usage"})
        for c in range(cases) for r in range(reps)
    ]
    _put(bundle, "run.jsonl", "".join(json.dumps(x) + "\n" for x in rows).encode())
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for path in sorted(bundle.rglob("*")):
            tar.add(path, arcname=path.relative_to(bundle).as_posix(), recursive=False)
    return buffer.getvalue()


def test_pages_stay_small_for_a_run_at_the_case_limit(submitter, operator, client, settings, tmp_path):
    from tests.service.vouch import approve

    cases = settings.SUBMISSION_MAX_CASES_PER_RUN
    data = _archive_with_cases(tmp_path, cases, reps=2)
    submission = receive_upload(submitter, "wide.tar.gz", data)
    assert validate_submission(str(submission.pk)) == states.QUARANTINED

    client.force_login(operator)
    started = time.perf_counter()
    review = client.get(f"/review/{submission.pk}/")
    review_s = time.perf_counter() - started
    assert review.status_code == 200
    assert len(set(re.findall(rb"case-\d{5}", review.content))) == 100  # one page of cases, not 2,000
    assert len(review.content) < 1_500_000, len(review.content)
    assert review_s < 10, review_s
    assert f"of {cases}".encode() in review.content
    assert client.get(f"/review/{submission.pk}/?page=20").status_code == 200

    assert approve(submission.pk, operator)
    run = submission.published_runs.get()
    client.logout()
    page = client.get(f"/runs/{run.pk}/")
    assert page.status_code == 200 and len(page.content) < 1_500_000, len(page.content)
    assert len(set(re.findall(rb"case-\d{5}", page.content))) == 100
    listing = client.get("/api/v1/runs/")
    assert listing.status_code == 200 and len(listing.content) < 10_000
    assert listing.json()["results"][0]["case_count"] == cases
    print(f"\nreview page {len(review.content)} bytes in {review_s:.2f} s; run page {len(page.content)} bytes;"
          f" /api/v1/runs/ {len(listing.content)} bytes")


def test_one_case_past_the_limit_is_refused_at_validation(submitter, settings, tmp_path):
    settings.SUBMISSION_MAX_CASES_PER_RUN = 50
    submission = receive_upload(submitter, "wider.tar.gz", _archive_with_cases(tmp_path, 51))
    assert validate_submission(str(submission.pk)) == states.INVALID
    submission.refresh_from_db()
    assert submission.error_codes() == ["limit.cases-per-run"]


def test_an_archive_that_expands_past_the_ratio_is_refused(submitter, settings):
    import gzip

    settings.SUBMISSION_MAX_EXPANSION_RATIO = 10
    buffer = io.BytesIO()
    payload = b"0" * (8 * 1024 * 1024)  # 8 MiB of zeros: ~8 KiB compressed, far past 10x (and the 1 MiB grace)
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        info = tarfile.TarInfo("runs/a/run.jsonl")
        info.size = len(payload)
        tar.addfile(info, io.BytesIO(payload))
    submission = receive_upload(submitter, "bomb.tar.gz", gzip.compress(buffer.getvalue()))
    assert validate_submission(str(submission.pk)) == states.INVALID
    submission.refresh_from_db()
    assert submission.error_codes() == ["archive.compression-ratio"]
