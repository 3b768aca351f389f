"""The README's main job: the whole registry on this machine with embedded defaults.

Migrates the SQLite database under var/, creates a local operator, starts
granian, a real Celery validation worker, the built-in scripted endpoint and
a runner worker for the local runner host (queue runs.local) whose allowlist
holds that endpoint; seeds labelled demo data through the real
submit → validate → approve pipeline and through the run queue (one run
request end to end, one reproduction), prints the URL and login, and runs
until Ctrl-C.
"""

from __future__ import annotations

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


class Command(BaseCommand):
    help = ("Run the registry locally: migrate, operator account, granian + Celery validation worker, "
            "a local runner host with its worker and the scripted endpoint, demo data.")

    def add_arguments(self, parser):
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--no-seed", action="store_true", help="do not create demo data")
        parser.add_argument("--exit-after-seed", action="store_true", help="stop once the demo data is public")

    def handle(self, *args, host, port, no_seed, exit_after_seed, **options):
        self.children: list[subprocess.Popen] = []
        self.stopping = False
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
        self.say(f"database: {settings.DATABASES['default']['NAME']}")
        call_command("migrate", interactive=False, verbosity=0)
        call_command("collectstatic", interactive=False, verbosity=0)
        operator, password = self.ensure_operator()
        self.children.append(self.start_worker())
        self.children.append(self.start_refserver())
        self.children.append(self.start_runner_worker(operator, url))
        self.children.append(self.start_granian(host, port))
        self.wait_until_up(url, self.children)
        if not no_seed:
            from registry_site.demo_data import seed
            from submissions.runqueue.demo import seed_runs

            published = seed(url, operator, say=self.say_unless_stopping)
            self.say(f"demo data: {published} runs published")
            queued = seed_runs(operator, say=self.say_unless_stopping)
            self.say(f"demo run queue: {queued} runs published through the local runner host")
        from registry_site.demo_data import leaderboard_summary

        self.say(leaderboard_summary(url))
        self.banner(url, password)
        if exit_after_seed:
            return
        while all(child.poll() is None for child in self.children):
            time.sleep(0.5)
        raise CommandError("a child process stopped; see its output above")

    def stop_children(self, timeout_s: float = 15.0) -> None:
        """SIGTERM to each child's whole process group (granian's and Celery's own
        workers included), then SIGKILL to any group still there after timeout_s."""
        for child in self.children:
            _signal_group(child, signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        for child in self.children:
            try:
                child.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
            _signal_group(child, signal.SIGKILL)  # whatever of the group is left (workers of a dead parent too)
            child.wait()

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
        return _start_child(
            [sys.executable, "-m", "celery", "-A", "registry_site", "worker", "--loglevel=WARNING",
             "--concurrency=1", "--prefetch-multiplier=1", "--without-gossip", "--without-mingle",
             "-B", f"--schedule={settings.VAR_DIR / 'celerybeat-schedule'}"]
        )

    def start_refserver(self) -> subprocess.Popen:
        """The built-in scripted endpoint: the one address the local runner host may call."""
        import json
        import socket

        from registry_site.demo_data import DEMO_REPLY, DEMO_TIMING

        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.refserver_url = f"http://127.0.0.1:{probe.getsockname()[1]}"
        config = settings.VAR_DIR / "refserver.json"
        partial = config.with_suffix(".partial")
        partial.write_text(json.dumps({"responses": [DEMO_REPLY], **DEMO_TIMING}))
        partial.replace(config)  # whole or not at all, even if Ctrl-C lands here
        self.say(f"scripted endpoint: {self.refserver_url}/v1 (allowlisted on runner host local)")
        return _start_child([sys.executable, "-m", "benchpack.refserver.server", "--port", self.refserver_url.rsplit(":", 1)[1],
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
        return subprocess.Popen(worker_argv(), env=env, start_new_session=True, preexec_fn=_die_with_parent)

    def start_granian(self, host: str, port: int) -> subprocess.Popen:
        self.say(f"granian: http://{host}:{port}")
        return _start_child(
            [sys.executable, "-m", "granian", "--interface", "wsgi", "--host", host, "--port", str(port),
             # static files through Django (WhiteNoise), as deployed: they carry the security headers
             "--workers", "1", "registry_site.wsgi:application"]
        )

    def wait_until_up(self, url: str, children, timeout_s: float = 60.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if any(child.poll() is not None for child in children):
                raise CommandError("granian or the Celery worker exited during start-up")
            try:
                if httpx.get(url + "/", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
        raise CommandError(f"{url} did not answer within {timeout_s:.0f} s")

    def banner(self, url: str, password: str) -> None:
        self.say("")
        self.say(f"Benchpack registry is running at {url}/")
        self.say(f"  operator login: {OPERATOR_EMAIL} / {password}   (review queue: {url}/review/)")
        self.say(f"  run queue: {url}/run-requests/ · runner hosts: {url}/runner-hosts/")
        self.say("  sign-up emails (verification links) are printed on this console")
        self.say("  Ctrl-C stops the web server, the workers and the scripted endpoint")


def _start_child(argv: list[str], env: dict | None = None) -> subprocess.Popen:
    """A child in its own session: the terminal's Ctrl-C reaches only this command,
    which then stops each child's whole group in order (no child racing to exit
    first, no "a child process stopped", no traceback). If this command is
    killed outright, the kernel sends the child SIGTERM (Linux)."""
    return subprocess.Popen(argv, env={**os.environ, **(env or {})}, start_new_session=True,
                            preexec_fn=_die_with_parent)


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
