"""What this app does when the catalogue announces a change (registry_site.catalogue.signals).

Connected in `SubmissionsConfig.ready`; runs inside the catalogue's transaction.
"""

from __future__ import annotations

from submissions.models import SubmissionEvent


def record_run_status_change(sender, run, actor, from_state: str, to_state: str, reason: str, **kwargs) -> None:
    """The submission's audit trail gets the change, and a run that is no longer public stops deciding
    the badge of the runs it reproduced (a withdrawn reproduction proves nothing)."""
    from submissions.runqueue.reproduction import refresh_badges_reproduced_by

    SubmissionEvent.objects.create(submission_id=run.submission_id, actor=actor, from_state=from_state,
                                   to_state=to_state, reason=f"run {run.label}: {reason}" if reason else f"run {run.label}")
    refresh_badges_reproduced_by(run)
