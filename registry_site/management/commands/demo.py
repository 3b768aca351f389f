"""The README's main job: the whole registry on this machine with embedded defaults.

Migrates the SQLite database under var/, creates a local operator, starts
granian, a real Celery validation worker, the built-in scripted endpoint and
a runner worker for the local runner host (queue runs.local) whose allowlist
holds that endpoint; seeds labelled demo data through the real
submit → validate → approve pipeline and through the run queue (one run
request end to end, one re-measurement by the same owner), publishes the real
result directories kept in registry_site/demo_real/ (and, when
scripts/llama-server.sh has built llama-server, one real run on this machine)
as real, self-reported uploads, prints the URL and login, and runs until Ctrl-C.
"""

from __future__ import annotations

import logging
import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

OPERATOR_EMAIL = "operator@benchpack.local"


class _Stop(KeyboardInterrupt):
    """Ctrl-C (SIGINT to the whole process group, as a terminal sends it) or SIGTERM."""


def _quiet_unraisable(unraisable, _default=sys.unraisablehook) -> None:
    # A signal can land while Python runs a callback whose exceptions it cannot raise (e.g.
    # importlib's module-lock weakref callback): it would print "Exception ignored … Traceback".
    # The stop is already recorded (Command.stopping) and the next step checks it.
    if isinstance(unraisable.exc_value, _Stop):
        return
    _default(unraisable)


class Command(BaseCommand):
    help = ("Run the registry locally: migrate, operator account, granian + Celery validation worker, "
            "a local runner host with its worker and the scripted endpoint, demo data.")

    def add_arguments(self, parser):
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000, help="the web server's port")
        # 0: a free port, chosen at start and printed in the banner (two demos, or a demo beside
        # another local service, never collide on a fixed default).
        parser.add_argument("--refserver-port", type=int, default=0,
                            help="the scripted endpoint the local runner host calls (default: a free port)")
        parser.add_argument("--seed-port", type=int, default=0,
                            help="the first of the scripted endpoints the demo seeding runs call (default: a free port; "
                                 "the others, which run beside it, always take free ports)")
        parser.add_argument("--no-seed", action="store_true", help="do not create demo data")
        parser.add_argument("--exit-after-seed", action="store_true", help="stop once the demo data is public")

    def handle(self, *args, host, port, refserver_port, seed_port, no_seed, exit_after_seed, **options):
        self.ports = {"web": port, "scripted endpoint (runner host)": refserver_port,
                      "scripted endpoint (seeding)": seed_port}
        self.children: list[subprocess.Popen] = []
        self.stopping = False
        sys.unraisablehook = _quiet_unraisable
        signal.signal(signal.SIGINT, self._on_signal)
        signal.signal(signal.SIGTERM, self._on_signal)
        try:
            self.run(host, port, no_seed, exit_after_seed)
        except KeyboardInterrupt:
            self.say("stopping")
        finally:
            # A second Ctrl-C while the children stop must not cut the cleanup short.
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            self.stop_children()
        if self.stopping:
            self.say("stopped")
            sys.exit(130)

    def _on_signal(self, signum, frame):
        if self.stopping:
            return  # already on the way out
        self.stopping = True
        raise _Stop

    def run(self, host, port, no_seed, exit_after_seed):
        url = f"http://{host}:{port}"
        # Links in emails (and the Sites row that allauth's emails name) point here;
        # set before `migrate`, which writes the Sites row, and before the children start.
        os.environ["SITE_URL"] = settings.SITE_URL = url
        # The demo is what a newcomer sees: real 404/500 pages, never Django's debug
        # pages (granian serves the static files either way). DEBUG=true in the
        # environment keeps them for development.
        os.environ.setdefault("DEBUG", "false")
        hosts = set(settings.ALLOWED_HOSTS) | {host}
        os.environ["ALLOWED_HOSTS"] = ",".join(sorted(hosts))
        settings.VAR_DIR.mkdir(parents=True, exist_ok=True)
        self.log_dir = settings.VAR_DIR / "log"
        self.log_dir.mkdir(exist_ok=True)
        # The console is for the banner: the children's output (request logs, Celery's start-up
        # and shutdown lines, root-user warnings) goes to var/log/, e-mails to var/outbox/, and
        # only a verification link is echoed here, one line per e-mail (watch_outbox).
        self.outbox = settings.VAR_DIR / "outbox"
        self.outbox.mkdir(exist_ok=True)
        os.environ.setdefault("EMAIL_BACKEND", "django.core.mail.backends.filebased.EmailBackend")
        logging.getLogger("httpx").setLevel(logging.WARNING)  # seeding's own requests
        logging.getLogger("kombu.connection").setLevel(logging.ERROR)  # "No hostname was supplied" (filesystem broker)
        self.say(f"database: {settings.DATABASES['default']['NAME']}  ·  logs: {self.log_dir}/")
        call_command("migrate", interactive=False, verbosity=0)
        self.checkpoint()
        call_command("collectstatic", interactive=False, verbosity=0)
        self.checkpoint()
        operator, password = self.ensure_operator()
        for start in (self.start_worker, self.start_refserver,
                      lambda: self.start_runner_worker(operator, url), lambda: self.start_granian(host, port)):
            self.checkpoint()
            self.children.append(start())
        self.wait_until_up(url, self.children)
        if not no_seed:
            from registry_site.demo_data import seed
            from submissions.runqueue.demo import seed_runs

            published = seed(url, operator, say=self.say_unless_stopping,
                             seed_port=self._port("scripted endpoint (seeding)"))
            self.say(f"demo data: {published} runs published")
            queued = seed_runs(operator, say=self.say_unless_stopping)
            self.say(f"demo run queue: {queued} runs published through the local runner host")
            self.checkpoint()
            from registry_site.demo_real.publish import publish_real_results
            from registry_site.demo_real.this_machine import publish_this_machine

            real = publish_real_results(url, operator, say=self.say_unless_stopping)
            self.checkpoint()
            real += publish_this_machine(url, operator, say=self.say_unless_stopping, log_dir=self.log_dir)
            self.say(f"real results: {real} runs published as real measurements (not demo data)")
        from registry_site.demo_data import leaderboard_summary

        self.say(leaderboard_summary(url))
        seen = set(self.outbox.iterdir())  # seeding's notices stay in var/outbox/
        self.banner(url, password)
        if exit_after_seed:
            return
        while all(child.poll() is None for child in self.children):
            self.checkpoint()
            seen = self.watch_outbox(seen)
            time.sleep(0.5)
        raise CommandError(f"a child process stopped; see its log in {self.log_dir}/")

    def watch_outbox(self, seen: set) -> set:
        """One line per new e-mail that carries a link to follow (sign-up verification, password reset)."""
        import re

        current = set(self.outbox.iterdir())
        for path in sorted(current - seen, key=lambda p: p.stat().st_mtime):
            text = path.read_text(encoding="utf-8", errors="replace")
            to = re.search(r"^To: (.+)$", text, flags=re.M)
            for link in dict.fromkeys(re.findall(r"https?://\S+/accounts/\S+?/(?=\s)", text)):
                self.say(f"e-mail to {to.group(1).strip() if to else '?'}: {link}")
        return current

    def stop_children(self, timeout_s: float = 15.0) -> None:
        """SIGTERM to each child's main process, which stops its own workers (Celery's warm
        shutdown, granian's workers), then SIGKILL to any of its group still there after timeout_s.
        Not SIGTERM to the whole group: Celery's pool processes then die under their parent, which
        logs an ERROR line for each."""
        for child in self.children:
            try:
                child.send_signal(signal.SIGTERM)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + timeout_s
        for child in self.children:
            try:
                child.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
            _signal_group(child, signal.SIGKILL)  # whatever of the group is left (workers of a dead parent too)
            child.wait()

    def checkpoint(self) -> None:
        """Stop here if a signal asked to (its _Stop may have been swallowed, see _quiet_unraisable)."""
        if self.stopping:
            raise _Stop

    def say_unless_stopping(self, message: str) -> None:
        """For long steps that may swallow KeyboardInterrupt (a run keeps its rows on Ctrl-C)."""
        if self.stopping:
            raise _Stop
        self.say(message)

    def say(self, message: str) -> None:
        self.stdout.write(message)
        self.stdout.flush()

    def ensure_operator(self):
        from allauth.account.models import EmailAddress
        from django.contrib.auth import get_user_model

        from accounts.operators import make_operator

        password_file = settings.VAR_DIR / "demo-operator-password.txt"
        User = get_user_model()
        user = User.objects.filter(email=OPERATOR_EMAIL).first()
        if user is None or not password_file.exists():
            password = secrets.token_urlsafe(12)
            if user is None:
                user = User.objects.create_user(username=OPERATOR_EMAIL, email=OPERATOR_EMAIL)
            user.set_password(password)
            user.save()
            password_file.write_text(password + "\n")
            password_file.chmod(0o600)
        password = password_file.read_text().strip()
        EmailAddress.objects.get_or_create(user=user, email=OPERATOR_EMAIL, defaults={"verified": True, "primary": True})
        make_operator(user)
        return user, password

    def start_worker(self) -> subprocess.Popen:
        if settings.CELERY_BROKER_URL == "filesystem://":
            for folder in settings.CELERY_BROKER_TRANSPORT_OPTIONS.values():
                if isinstance(folder, str):
                    Path(folder).mkdir(parents=True, exist_ok=True)
        self.say(f"celery worker: broker {settings.CELERY_BROKER_URL}")
        # -B embeds beat, so the reaper (stuck validations, undelivered uploads) and
        # the email queue run here too: the demo has no separate beat process.
        return self._start_child("celery-worker",
            [sys.executable, "-m", "celery", "-A", "registry_site", "worker", "--loglevel=WARNING",
             "--concurrency=1", "--prefetch-multiplier=1", "--without-gossip", "--without-mingle",
             "-B", f"--schedule={settings.VAR_DIR / 'celerybeat-schedule'}"]
        )

    def start_refserver(self) -> subprocess.Popen:
        """The built-in scripted endpoint: the one address the local runner host may call."""
        import json

        from registry_site.demo_data import DEMO_REPLY, DEMO_TIMING

        port = self._port("scripted endpoint (runner host)")
        self.refserver_url = f"http://127.0.0.1:{port}"
        config = settings.VAR_DIR / "refserver.json"
        partial = config.with_suffix(".partial")
        partial.write_text(json.dumps({"responses": [DEMO_REPLY], **DEMO_TIMING}))
        partial.replace(config)  # whole or not at all, even if Ctrl-C lands here
        self.say(f"scripted endpoint: {self.refserver_url}/v1 (allowlisted on runner host local)")
        return self._start_child("refserver", [sys.executable, "-m", "benchpack.refserver.server", "--port", self.refserver_url.rsplit(":", 1)[1],
                             "--config", str(config)])

    def start_runner_worker(self, operator, url: str) -> subprocess.Popen:
        """The local runner host's worker: no database URL, no secret key; a host token and the
        registry's HTTP API (submissions.runqueue.runner), as on another machine."""
        from submissions.runqueue.demo import LOCAL_HOST, ensure_local_host, worker_argv, worker_env

        _, token = ensure_local_host(operator, self.refserver_url + "/v1")
        self.say(f"runner worker: queue runs.{LOCAL_HOST}, one run at a time, reaching {url} with a host token")
        broker_dir = str(settings.CELERY_BROKER_DIR) if settings.RUNNER_BROKER_URL == "filesystem://" else None
        env = worker_env(os.environ, host=LOCAL_HOST, token=token, registry_url=url,
                         broker_url=settings.RUNNER_BROKER_URL, broker_dir=broker_dir,
                         heartbeat_s=settings.RUN_HEARTBEAT_INTERVAL_S)
        return self._start_child("runner-worker", worker_argv(), whole_env=env)

    def start_granian(self, host: str, port: int) -> subprocess.Popen:
        self.say(f"granian: http://{host}:{port}")
        return self._start_child("granian",
            [sys.executable, "-m", "granian", "--interface", "wsgi", "--host", host, "--port", str(port),
             # static files through Django (WhiteNoise), as deployed: they carry the security headers
             "--workers", "1",
             # a worker that does not stop gracefully is killed after 10 s, as deploy/systemd's unit does, so
             # Ctrl-C never waits on one
             "--workers-kill-timeout", "10", "registry_site.wsgi:application"]
        )

    def wait_until_up(self, url: str, children, timeout_s: float = 60.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            self.checkpoint()
            if any(child.poll() is not None for child in children):
                raise CommandError(f"granian or a worker exited during start-up; see {self.log_dir}/")
            try:
                if httpx.get(url + "/", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
        raise CommandError(f"{url} did not answer within {timeout_s:.0f} s")

    def banner(self, url: str, password: str) -> None:
        """The last thing printed before the registry waits: nothing logs to this console after it
        but a verification link, one line per e-mail."""
        self.say("")
        self.say(f"Benchpack registry is running at {url}/")
        self.say(f"  operator login: {OPERATOR_EMAIL} / {password}   (review queue: {url}/review/)")
        self.say(f"  ask a question: {url}/answer/ · leaderboards: {url}/leaderboards/")
        self.say(f"  run queue: {url}/run-requests/ · runner hosts: {url}/runner-hosts/")
        self.say("  ports: " + ", ".join(f"{name} {number}" for name, number in self.ports.items())
                 + " (--port, --refserver-port, --seed-port)")
        self.say(f"  logs: {self.log_dir}/ · e-mails: {self.outbox}/ (verification links are printed below)")
        self.say("  Ctrl-C stops the web server, the workers and the scripted endpoint")

    def _port(self, name: str) -> int:
        """The port asked for, or a free one (chosen once, so the banner lists the one in use)."""
        import socket

        if not self.ports[name]:
            with socket.socket() as probe:
                probe.bind(("127.0.0.1", 0))
                self.ports[name] = probe.getsockname()[1]
        return self.ports[name]

    def _start_child(self, name: str, argv: list[str], env: dict | None = None, *,
                     whole_env: dict | None = None) -> subprocess.Popen:
        with open(self.log_dir / f"{name}.log", "ab") as log:  # the child keeps its own copy of the descriptor
            return _start_child(argv, env, log, whole_env=whole_env)


def _start_child(argv: list[str], env: dict | None = None, log=None, *, whole_env: dict | None = None) -> subprocess.Popen:
    """A child in its own session: the terminal's Ctrl-C reaches only this command,
    which then stops each child's whole group in order (no child racing to exit
    first, no "a child process stopped", no traceback). If this command is
    killed outright, the kernel sends the child SIGTERM (Linux)."""
    # whole_env replaces the environment (the runner worker's holds no registry secret);
    # env adds to this process's.
    return subprocess.Popen(argv, env=whole_env if whole_env is not None else {**os.environ, **(env or {})},
                            start_new_session=True,
                            preexec_fn=_die_with_parent, stdin=subprocess.DEVNULL, stdout=log, stderr=log)


def _die_with_parent() -> None:
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass  # not Linux: Ctrl-C and SIGTERM still stop the children


def _signal_group(child: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(child.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass
