"""Register runner hosts and their allowlists (operators; see docs/runner-hosts.md).

    manage.py runner_host add gpu-1 --owner lab@example.org
    manage.py runner_host allow-endpoint gpu-1 llama --url http://10.0.0.7:8081/v1 \\
        --adapter openai-chat --model qwen2.5-7b-instruct=Q4_K_M --runtime llama.cpp --runtime-version b5040
    manage.py runner_host allow-pack gpu-1 runtime-sweep
    manage.py runner_host allow-pack gpu-1 my-pack --archive my-pack.tar.gz
    manage.py runner_host list
    manage.py runner_host approve gpu-1    # fix its hardware class from its latest report (after a look)
    manage.py runner_host approve gpu-1 --hardware-class amd-epyc-9454+nvidia-h100+512gb
    manage.py runner_host rotate gpu-1     # a new host token and broker password; the old ones end
    manage.py runner_host revoke gpu-1     # the token and the broker user end; the worker stops

`add` and `rotate` print the host's two secrets once: its host token (for the
runner-host API) and its broker login (a RabbitMQ user limited to runs.<host>,
created with rabbitmqctl when RUNNER_BROKER_URL is amqp://). Nothing else goes
to the runner host (deploy/runner.env.example).

Every action takes --dry-run: it checks everything and says what it would store.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.core.exceptions import ValidationError
from django.db import transaction

from django.conf import settings

from submissions.runqueue import broker_users, tokens
from submissions.runqueue.broker_users import BrokerAdminError
from submissions.runqueue.hosts import AllowlistError, allow_endpoint, allow_pack, endpoint_fields, pack_entry_fields
from submissions.runqueue.models import RunnerHost, host_name_validator


class Command(BaseCommand):
    help = "Register a runner host, allowlist its endpoints and packs, list hosts."

    def add_arguments(self, parser):
        parser.add_argument("--dry-run", action="store_true", help="check and report, store nothing")
        actions = parser.add_subparsers(dest="action", required=True)
        add = actions.add_parser("add", help="register a host (its worker listens on runs.<name>)")
        add.add_argument("name")
        add.add_argument("--owner", required=True, help="email of the account that owns the machine")
        add.add_argument("--description", default="")
        endpoint = actions.add_parser("allow-endpoint", help="allowlist an endpoint on a host (or replace one)")
        endpoint.add_argument("host")
        endpoint.add_argument("name", help="short name requests use to choose it")
        endpoint.add_argument("--url", required=True)
        endpoint.add_argument("--adapter", required=True)
        endpoint.add_argument("--model", action="append", required=True, dest="models",
                              help="NAME[=QUANTIZATION] served there; repeat for several")
        endpoint.add_argument("--runtime", required=True, help="runtime name, e.g. llama.cpp")
        endpoint.add_argument("--runtime-version", required=True)
        endpoint.add_argument("--address", action="append", dest="addresses",
                              help="an IP address the worker may connect to (repeat); default: what the URL's "
                                   "host resolves to here, now")
        pack = actions.add_parser("allow-pack", help="allowlist a bundled pack or a pack archive on a host")
        pack.add_argument("host")
        pack.add_argument("pack_id")
        pack.add_argument("--version")
        pack.add_argument("--archive", help="a .tar.gz/.zip of a pack directory, checked by the core loader")
        approve = actions.add_parser("approve", help="fix a host's hardware class (only operators change it; a "
                                     "reproduction is matched on it, a bundle must agree with it)")
        approve.add_argument("host")
        approve.add_argument("--hardware-class", default="",
                             help="the class to approve; default: the class of the host's latest report")
        for name in ("enable", "disable"):
            actions.add_parser(name, help=f"{name} a host").add_argument("host")
        actions.add_parser("rotate", help="issue a new host token and broker password (the old ones end)"
                           ).add_argument("host")
        actions.add_parser("revoke", help="end the host token and delete the host's broker user").add_argument("host")
        actions.add_parser("list", help="hosts, online state, allowlists")

    def handle(self, *args, action, dry_run, **options):
        try:
            with transaction.atomic():
                getattr(self, "do_" + action.replace("-", "_"))(dry_run=dry_run, **options)
                if dry_run:
                    transaction.set_rollback(True)
        except BrokerAdminError as exc:
            raise CommandError(f"the broker refused: {exc}; nothing was stored") from None
        except (AllowlistError, ValidationError) as exc:
            raise CommandError("; ".join(exc.messages) if isinstance(exc, ValidationError) else str(exc)) from None

    def host(self, name: str) -> RunnerHost:
        host = RunnerHost.objects.filter(name=name).first()
        if host is None:
            raise CommandError(f"no runner host {name!r}; register it with: manage.py runner_host add {name} --owner EMAIL")
        return host

    def say(self, dry_run: bool, message: str) -> None:
        self.stdout.write(("would " if dry_run else "") + message)

    def do_add(self, *, name, owner, description, dry_run, **_):
        host_name_validator(name)
        user = get_user_model().objects.filter(email__iexact=owner).first()
        if user is None:
            raise CommandError(f"no account with email {owner}; the owner signs up first")
        if RunnerHost.objects.filter(name=name).exists():
            raise CommandError(f"runner host {name} exists already")
        host = RunnerHost.objects.create(name=name, owner=user, description=description)
        self.say(dry_run, f"register runner host {name} (queue runs.{name}) owned by {user.email}")
        self.secrets(host, dry_run)

    def secrets(self, host: RunnerHost, dry_run: bool) -> None:
        """A new token and broker login, printed once. The broker user is made last, inside the
        transaction: if rabbitmqctl fails, the command fails and nothing is stored."""
        if dry_run:
            self.say(True, f"issue a host token for {host.name}")
            if broker_users.managed():
                self.say(True, f"create the RabbitMQ user {broker_users.user_name(host.name)} on vhost "
                               f"{broker_users.vhost_of(host.name)} (its own) with configure/write/read {broker_users.permissions(host.name)[0]}")
            return
        token = tokens.issue(host)
        login = None
        if broker_users.managed():
            login = broker_users.create(host.name)
            RunnerHost.objects.filter(pk=host.pk).update(broker_user=login.user)
        self.stdout.write("")
        self.stdout.write(f"The secrets of runner host {host.name}, shown this once (deploy/runner.env.example):")
        self.stdout.write(f"  BENCHPACK_HOST_TOKEN={token}")
        if login is not None:
            self.stdout.write(f"  CELERY_BROKER_URL={login.url(settings.RUNNER_BROKER_URL)}")
        else:
            self.stdout.write(f"  (no broker login: RUNNER_BROKER_URL={settings.RUNNER_BROKER_URL.split('://')[0]}:// "
                              "cannot limit a host to its queue; use RabbitMQ for hosts on other machines)")

    def do_rotate(self, *, host, dry_run, **_):
        found = self.host(host)
        self.say(dry_run, f"replace the host token of {host} (the old one ends now)")
        self.secrets(found, dry_run)

    def do_revoke(self, *, host, dry_run, **_):
        found = self.host(host)
        if dry_run:
            self.say(True, f"revoke the host token of {host}"
                           + (f" and delete the RabbitMQ user {broker_users.user_name(host)}"
                              if broker_users.managed() else ""))
            return
        had = tokens.revoke(found)
        deleted = broker_users.delete(host) if broker_users.managed() else False
        RunnerHost.objects.filter(pk=found.pk).update(broker_user="")
        # Its queued requests can never be claimed now: they end with that reason (recovery._queued).
        from submissions.runqueue.recovery import recover_lost_runs

        ended = [pk for pk, outcome in recover_lost_runs(host_id=found.pk) if outcome == "failed"]
        self.stdout.write(f"revoked {host}: host token {'ended' if had else 'was already absent'}"
                          + (f"; RabbitMQ user {broker_users.user_name(host)} "
                             f"{'deleted' if deleted else 'was already absent'}" if broker_users.managed() else "")
                          + "; its worker stops at its next heartbeat"
                          + (f"; {len(ended)} queued request(s) ended" if ended else ""))

    def do_allow_endpoint(self, *, host, name, url, adapter, models, runtime, runtime_version, addresses, dry_run, **_):
        host_name_validator(name)
        fields = endpoint_fields(url, adapter, models, runtime, runtime_version, addresses)
        allow_endpoint(self.host(host), name, **fields)
        served = ", ".join(m["name"] + (f" ({m['quantization']})" if m["quantization"] else "") for m in fields["served_models"])
        self.say(dry_run, f"allow {host}/{name}: {url} [{adapter}] at {', '.join(fields['addresses'])} "
                          f"serving {served}, runtime {fields['runtime_name']} {fields['runtime_version']}")

    def do_allow_pack(self, *, host, pack_id, version, archive, dry_run, **_):
        fields = pack_entry_fields(pack_id, version, archive)
        allow_pack(self.host(host), **fields)
        source = f"archive {archive} (sha256 {fields['archive_sha256'][:12]})" if archive else "bundled"
        self.say(dry_run, f"allow pack {fields['pack_id']} {fields['version']} on {host} ({source})")

    def do_approve(self, *, host, hardware_class, dry_run, **_):
        from submissions.runqueue.hosts import approve_hardware

        found = self.host(host)
        before = found.hardware_class
        chosen = approve_hardware(found, hardware_class)
        self.say(dry_run, f"approve {host} as hardware class {chosen}"
                          + (f" (was {before})" if before and before != chosen else ""))

    def do_enable(self, *, host, dry_run, **_):
        RunnerHost.objects.filter(pk=self.host(host).pk).update(enabled=True)
        self.say(dry_run, f"enable {host}")

    def do_disable(self, *, host, dry_run, **_):
        RunnerHost.objects.filter(pk=self.host(host).pk).update(enabled=False)
        self.say(dry_run, f"disable {host} (new requests are refused; queued ones still run when its worker takes them)")

    def do_list(self, **_):
        for host in RunnerHost.objects.select_related("owner").prefetch_related("endpoints", "packs"):
            state = "online" if host.is_online else "offline"
            token = f"token {host.token_prefix}…" if host.token_hash else "no token"
            reported = host.reported_hardware_class
            hardware = f"hardware {host.hardware_class or 'not approved'}"
            if reported and reported != host.hardware_class:
                hardware += f" (reports {reported})"
            self.stdout.write(f"{host.name}  {state}  owner {host.owner.email}  {hardware}"
                              f"  {token}{'' if host.enabled else '  DISABLED'}")
            for endpoint in host.endpoints.all():
                self.stdout.write(f"  endpoint {endpoint.name}: {endpoint.url} [{endpoint.adapter}] "
                                  f"addresses {', '.join(endpoint.addresses)} models {', '.join(endpoint.model_names())}")
            for pack in host.packs.all():
                self.stdout.write(f"  pack {pack} ({pack.source})")
