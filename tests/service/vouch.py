"""Approving runs that may need a written reason in tests: scripted-endpoint runs have no model to judge,
and a variant of a real result may name a chip the table does not know, so their plausibility is
`unchecked` and approval needs an operator's written reason (submissions.review.NEEDS_REASON); the
repository's real result bundles (an Apple M5 Max) are plausible and need none. Tests of something else
record one when asked, as an operator would (`approve_with_reason`)."""

from __future__ import annotations

from submissions.review import approve_with_reason

REASON = "a real run whose chip the plausibility table does not list, checked by hand"
SCRIPTED_REASON = "scripted endpoint: demo data, no model to judge"


def approve(submission_id, operator, reason: str = REASON) -> bool:
    return approve_with_reason(submission_id, operator, reason)
