"""Approving the repository's real result bundles in tests: they ran on an Apple M5 Max, which the chip
table does not know, so their plausibility is `unchecked` and approval needs an operator's written
reason (submissions.review.NEEDS_REASON). Tests of something else record one, as an operator would."""

from __future__ import annotations

from submissions.review import approve_with_reason

REASON = "real run on an Apple M5 Max, a chip the plausibility table does not list yet"


def approve(submission_id, operator) -> bool:
    return approve_with_reason(submission_id, operator, REASON)
