"""The broker login of a runner host: one RabbitMQ user per host, in a virtual host of its own.

A runner host's worker consumes `runs.<host>` and nothing else. Its user has
access to one RabbitMQ vhost, `<base vhost>.<host>` (`vhost_of`), which holds
nothing but that queue, and within it may configure, write and read only the
names `runs.<host>` (the queue and the direct exchange of the same name Celery
declares for it). Permissions alone are not enough in a shared vhost: a
*passive* queue.declare needs no permission in RabbitMQ, so any login of the
vhost could learn whether another host's queue exists and how many messages
wait in it. In a vhost of its own there is nothing of another host to see;
another host's vhost refuses the login (ACCESS_REFUSED). The registry's own
user (RUNNER_BROKER_URL's) is given the same names in each host's vhost to
publish there. Runner workers run without remote control, events, gossip,
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
from urllib.parse import quote, unquote, urlsplit, urlunsplit

from django.conf import settings


class BrokerAdminError(RuntimeError):
    """rabbitmqctl failed; the message says which command and what it said."""


@dataclass(frozen=True)
class BrokerLogin:
    user: str
    password: str
    vhost: str

    def url(self, broker_url: str) -> str:
        """The host's CELERY_BROKER_URL: the registry's broker address with this login and its vhost."""
        parts = urlsplit(broker_url)
        where = parts.hostname or "127.0.0.1"
        port = f":{parts.port}" if parts.port else ""
        return f"{parts.scheme}://{self.user}:{self.password}@{where}{port}/{quote(self.vhost, safe='')}"


def user_name(host: str) -> str:
    return f"runner-{host}"


def permissions(host: str) -> tuple[str, str, str]:
    """configure, write, read: the host's own queue and exchange name, anchored."""
    own = "^" + re.escape(f"runs.{host}") + "$"
    return own, own, own


def vhost() -> str:
    path = urlsplit(settings.RUNNER_BROKER_URL).path
    return unquote(path[1:]) if path and path != "/" else "/"


def vhost_of(host: str) -> str:
    """The host's own vhost: `<RUNNER_BROKER_URL's vhost>.<host>` (`runs.<host>` under the default vhost)."""
    base = vhost()
    return f"{base}.{host}" if base != "/" else f"runs.{host}"


def url_for(host: str) -> str:
    """RUNNER_BROKER_URL (the registry's login) pointed at the host's vhost: where its runs are sent."""
    if not managed():
        return settings.RUNNER_BROKER_URL
    parts = urlsplit(settings.RUNNER_BROKER_URL)
    return urlunsplit((parts.scheme, parts.netloc, "/" + quote(vhost_of(host), safe=""), parts.query, ""))


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
    login = BrokerLogin(user_name(host), secrets.token_urlsafe(24), vhost_of(host))
    vhosts = {line.strip() for line in _ctl("list_vhosts", "--quiet", "--no-table-headers").splitlines()}
    if login.vhost not in vhosts:
        _ctl("add_vhost", login.vhost)
    registry_user = unquote(urlsplit(settings.RUNNER_BROKER_URL).username or "guest")
    # Celery publishes through the default exchange (routing key = the queue): the registry may write
    # there too; in this vhost it routes only to runs.<host>.
    configure, write, read = permissions(host)
    _ctl("set_permissions", "-p", login.vhost, registry_user, configure, f"^(amq\\.default|{write[1:-1]})$", read)
    existing = {line.split("\t", 1)[0] for line in _ctl("list_users", "--quiet", "--no-table-headers").splitlines()}
    if login.user in existing:
        _ctl("change_password", login.user, stdin=login.password)
    else:
        _ctl("add_user", login.user, stdin=login.password)
    _ctl("clear_permissions", "-p", vhost(), login.user)  # a login from before vhosts of their own
    _ctl("set_permissions", "-p", login.vhost, login.user, *permissions(host))
    return login


def delete(host: str) -> bool:
    """Remove the host's user (RabbitMQ closes its open connections) and its vhost (its queued messages:
    the requests end with a reason, recovery._queued); False when there was no user."""
    try:
        _ctl("delete_user", user_name(host))
    except BrokerAdminError as exc:
        if "no_such_user" in str(exc) or "does not exist" in str(exc):
            return False
        raise
    try:
        _ctl("delete_vhost", vhost_of(host))
    except BrokerAdminError as exc:
        if "no_such_vhost" not in str(exc) and "does not exist" not in str(exc):
            raise
    return True
