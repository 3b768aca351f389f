"""Submission states and the transitions allowed between them."""

RECEIVED = "received"
VALIDATING = "validating"
QUARANTINED = "quarantined"
INVALID = "invalid"
APPROVED = "approved"
REJECTED = "rejected"
# Validation could not be completed (attempts used up: the worker died or the
# server kept failing). Not a verdict on the bundle: the same bytes may be sent again.
FAILED = "failed"

CHOICES = [
    (RECEIVED, "Received"),
    (VALIDATING, "Validating"),
    (QUARANTINED, "Quarantined (awaiting review)"),
    (INVALID, "Invalid"),
    (APPROVED, "Approved"),
    (REJECTED, "Rejected"),
    (FAILED, "Failed (not judged)"),
]

# from-state -> the states it may move to
ALLOWED = {
    RECEIVED: {VALIDATING, FAILED},
    # a validation whose worker died is handed back to the queue by the reaper;
    # one that met a server error goes back to `received` until it is retried
    VALIDATING: {QUARANTINED, INVALID, RECEIVED, FAILED},
    QUARANTINED: {APPROVED, REJECTED},
    INVALID: set(),
    APPROVED: set(),
    REJECTED: set(),
    FAILED: set(),
}

FINAL = {INVALID, APPROVED, REJECTED, FAILED}
