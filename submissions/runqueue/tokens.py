"""Host tokens: the one registry credential a runner host holds.

A token is scoped to one host and authenticates that host's worker to the
runner-host HTTP API (submissions.api.runner_host_v1) and nothing else. It
is random (256 bits), shown once, stored only as its SHA-256 (a slow hash
buys nothing for a random secret of this length; GitHub and PyPI store
API tokens the same way), and ends at once when revoked or rotated: the
lookup is by hash, so the old value simply matches no row.
"""

from __future__ import annotations

import hashlib
import secrets

from django.utils import timezone

from submissions.runqueue.models import RunnerHost

PREFIX = "bph_"


def digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def issue(host: RunnerHost) -> str:
    """A new token for `host` (replacing any previous one); the caller shows it once."""
    token = PREFIX + secrets.token_urlsafe(32)
    updated = RunnerHost.objects.filter(pk=host.pk).update(
        token_hash=digest(token), token_prefix=token[:12], token_issued_at=timezone.now())
    if updated != 1:
        raise RunnerHost.DoesNotExist(f"runner host {host.name} no longer exists")
    host.token_hash, host.token_prefix = digest(token), token[:12]
    return token


def revoke(host: RunnerHost) -> bool:
    """End the host's token; True when there was one."""
    return bool(RunnerHost.objects.filter(pk=host.pk).exclude(token_hash="").update(
        token_hash="", token_prefix="", token_issued_at=None))


def host_for(token: str) -> RunnerHost | None:
    """The enabled host this token belongs to, or None."""
    if not token.startswith(PREFIX) or len(token) > 200:
        return None
    return RunnerHost.objects.filter(token_hash=digest(token), enabled=True).first()
