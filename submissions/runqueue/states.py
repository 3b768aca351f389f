"""Run request states and the moves allowed between them."""

QUEUED = "queued"
RUNNING = "running"
FINISHED = "finished"
FAILED = "failed"
CANCELLED = "cancelled"

CHOICES = [
    (QUEUED, "Queued"),
    (RUNNING, "Running"),
    (FINISHED, "Finished"),
    (FAILED, "Failed"),
    (CANCELLED, "Cancelled"),
]

ALLOWED = {
    # failed before it started: attempts used up, or the allowlist changed under it
    QUEUED: {RUNNING, CANCELLED, FAILED},
    # back to queued only when the reaper retries a run whose worker died
    RUNNING: {FINISHED, FAILED, CANCELLED, QUEUED},
    FINISHED: set(),
    FAILED: set(),
    CANCELLED: set(),
}

FINAL = {FINISHED, FAILED, CANCELLED}
