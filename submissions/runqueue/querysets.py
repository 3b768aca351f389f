"""Who sees which runner hosts and run requests: the only place these rules live.

Operators see and use every host. A host's owner sees their hosts and every
request on them, and may queue runs there. Anyone else sees nothing.
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import models
from django.utils import timezone

from submissions.runqueue import states


def _is_operator(user) -> bool:
    return user.is_authenticated and user.has_perm("submissions.review_submission")


class RunnerHostQuerySet(models.QuerySet):
    def visible_to(self, user):
        if not user.is_authenticated:
            return self.none()
        if _is_operator(user):
            return self.all()
        return self.filter(owner=user)

    def requestable_by(self, user):
        """Hosts `user` may queue runs on: enabled, and theirs unless they are an operator."""
        return self.visible_to(user).filter(enabled=True)

    def online(self, now=None):
        now = now or timezone.now()
        return self.filter(heartbeat_at__gte=now - timedelta(seconds=settings.RUNNER_HOST_OFFLINE_AFTER_S))


class RunRequestQuerySet(models.QuerySet):
    def visible_to(self, user):
        if not user.is_authenticated:
            return self.none()
        if _is_operator(user):
            return self.all()
        return self.filter(models.Q(host__owner=user) | models.Q(requested_by=user))

    def active(self):
        return self.filter(state__in=(states.QUEUED, states.RUNNING))

    def silent_runs(self, older_than):
        """Running, but no heartbeat since `older_than`: the worker is gone (or the machine is)."""
        return self.filter(state=states.RUNNING, heartbeat_at__lt=older_than)

    def never_sent(self, older_than):
        """Queued and committed, but the process died before its message went to the broker."""
        return self.filter(state=states.QUEUED, sent_at__isnull=True, created_at__lt=older_than)
