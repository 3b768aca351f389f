"""Who sees which submissions: the only place visibility rules live."""

from __future__ import annotations

from django.db import models

from submissions import states


class SubmissionQuerySet(models.QuerySet):
    def owned_by(self, user):
        if not user.is_authenticated:
            return self.none()
        return self.filter(submitter=user)

    def review_queue(self):
        return self.filter(state=states.QUARANTINED).order_by("created_at", "pk")

    def visible_to(self, user):
        """Submitters see their own in every state; operators see everything."""
        if not user.is_authenticated:
            return self.none()
        if user.has_perm("submissions.review_submission"):
            return self.all()
        return self.filter(submitter=user)

    def stuck_validating(self, older_than):
        return self.filter(state=states.VALIDATING, validating_since__lt=older_than)

    def stuck_received(self, older_than):
        """Uploads whose validation message reached the broker before `older_than` and was lost."""
        return self.filter(state=states.RECEIVED, dispatched_at__lt=older_than)

    def undispatched(self, older_than):
        """Uploads whose validation message never reached the broker (it was down at upload)."""
        return self.filter(state=states.RECEIVED, dispatched_at__isnull=True, created_at__lt=older_than)

    def judged_with_sha256(self, digest: str):
        """The submission that holds these bytes; `failed` ones were never judged and do not count."""
        return self.filter(archive_sha256=digest).exclude(state=states.FAILED)
