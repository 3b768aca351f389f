"""Submission states and the transitions allowed between them."""

RECEIVED = "received"
VALIDATING = "validating"
QUARANTINED = "quarantined"
INVALID = "invalid"
APPROVED = "approved"
REJECTED = "rejected"

CHOICES = [
    (RECEIVED, "Received"),
    (VALIDATING, "Validating"),
    (QUARANTINED, "Quarantined (awaiting review)"),
    (INVALID, "Invalid"),
    (APPROVED, "Approved"),
    (REJECTED, "Rejected"),
]

# from-state -> the states it may move to
ALLOWED = {
    RECEIVED: {VALIDATING},
    # a validation whose worker died is handed back to the queue by the reaper
    VALIDATING: {QUARANTINED, INVALID, RECEIVED},
    QUARANTINED: {APPROVED, REJECTED},
    INVALID: set(),
    APPROVED: set(),
    REJECTED: set(),
}

FINAL = {INVALID, APPROVED, REJECTED}
