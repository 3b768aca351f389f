"""Approving unchecked runs in tests: the repository's real result bundles ran on an Apple M5 Max, which
the chip table does not know, and scripted-endpoint runs have no model to judge, so their plausibility
is `unchecked` and approval needs an operator's written reason (submissions.review.NEEDS_REASON).
Tests of something else record one, as an operator would."""

from __future__ import annotations

from submissions.review import approve_with_reason

REASON = "real run on an Apple M5 Max, a chip the plausibility table does not list yet"
SCRIPTED_REASON = "scripted endpoint: demo data, no model to judge"


def approve(submission_id, operator, reason: str = REASON) -> bool:
    return approve_with_reason(submission_id, operator, reason)
