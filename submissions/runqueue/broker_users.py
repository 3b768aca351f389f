"""The broker login of a runner host: one RabbitMQ user per host, limited to its own queue.

A runner host's worker consumes `runs.<host>` and nothing else, so its user
may configure, write and read only the names `runs.<host>` (the queue and
the direct exchange of the same name Celery declares for it). It can neither
read, publish to nor declare another host's queue: RabbitMQ answers
ACCESS_REFUSED. Runner workers run without remote control, events, gossip,
mingle or a result backend (submissions.runqueue.runner.app), so they need
nothing else: no `celery.pidbox`, no `celeryev`, no reply queues.

Managed with `rabbitmqctl` on the broker's machine (deploy/README.md: the
registry host runs RabbitMQ; `RABBITMQCTL` may name another command, e.g.
`ssh broker sudo rabbitmqctl`). Passwords go to rabbitmqctl on stdin, never
on a command line another user could read.
"""

from __future__ import annotations

import re
import secrets
import shlex
import subprocess
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from django.conf import settings


class BrokerAdminError(RuntimeError):
    """rabbitmqctl failed; the message says which command and what it said."""


@dataclass(frozen=True)
class BrokerLogin:
    user: str
    password: str
    vhost: str

    def url(self, broker_url: str) -> str:
        """The host's CELERY_BROKER_URL: the registry's broker address with this login."""
        parts = urlsplit(broker_url)
        where = parts.hostname or "127.0.0.1"
        port = f":{parts.port}" if parts.port else ""
        vhost = parts.path or "/"
        return f"{parts.scheme}://{self.user}:{self.password}@{where}{port}{vhost}"


def user_name(host: str) -> str:
    return f"runner-{host}"


def permissions(host: str) -> tuple[str, str, str]:
    """configure, write, read: the host's own queue and exchange name, anchored."""
    own = "^" + re.escape(f"runs.{host}") + "$"
    return own, own, own


def vhost() -> str:
    path = urlsplit(settings.RUNNER_BROKER_URL).path
    return unquote(path[1:]) if path and path != "/" else "/"


def managed() -> bool:
    """Whether hosts get their own broker login: only RabbitMQ (AMQP) can scope one per queue."""
    return settings.RUNNER_BROKER_URL.startswith(("amqp://", "amqps://", "pyamqp://"))


def _ctl(*args: str, stdin: str | None = None) -> str:
    argv = [*shlex.split(settings.RABBITMQCTL), *args]
    try:
        done = subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise BrokerAdminError(f"{argv[0]} {args[0]}: {exc}") from None
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip().splitlines()
        raise BrokerAdminError(f"{' '.join(argv[:len(argv) - len(args) + 2])}: {said[-1] if said else 'failed'} "
                               f"(exit {done.returncode})")
    return done.stdout


def create(host: str) -> BrokerLogin:
    """A new user for the host with a new password and its permissions; replaces an existing one's password."""
    login = BrokerLogin(user_name(host), secrets.token_urlsafe(24), vhost())
    existing = {line.split("\t", 1)[0] for line in _ctl("list_users", "--quiet", "--no-table-headers").splitlines()}
    if login.user in existing:
        _ctl("change_password", login.user, stdin=login.password)
    else:
        _ctl("add_user", login.user, stdin=login.password)
    _ctl("set_permissions", "-p", login.vhost, login.user, *permissions(host))
    return login


def delete(host: str) -> bool:
    """Remove the host's user (RabbitMQ closes its open connections); False when there was none."""
    try:
        _ctl("delete_user", user_name(host))
    except BrokerAdminError as exc:
        if "no_such_user" in str(exc) or "does not exist" in str(exc):
            return False
        raise
    return True
