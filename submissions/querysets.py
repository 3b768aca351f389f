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
        """Uploads whose validation message was lost (broker restart, say)."""
        return self.filter(state=states.RECEIVED, created_at__lt=older_than)
