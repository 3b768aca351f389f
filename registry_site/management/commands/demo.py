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


def _stop_on_sigterm(signum, frame):
    raise KeyboardInterrupt


class Command(BaseCommand):
    help = ("Run the registry locally: migrate, operator account, granian + Celery validation worker, "
            "a local runner host with its worker and the scripted endpoint, demo data.")

    def add_arguments(self, parser):
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--no-seed", action="store_true", help="do not create demo data")
        parser.add_argument("--exit-after-seed", action="store_true", help="stop once the demo data is public")

    def handle(self, *args, host, port, no_seed, exit_after_seed, **options):
        signal.signal(signal.SIGTERM, _stop_on_sigterm)  # so `kill` also stops the children
        settings.VAR_DIR.mkdir(parents=True, exist_ok=True)
        self.say(f"database: {settings.DATABASES['default']['NAME']}")
        call_command("migrate", interactive=False, verbosity=0)
        call_command("collectstatic", interactive=False, verbosity=0)
        operator, password = self.ensure_operator()
        url = f"http://{host}:{port}"
        # links in emails sent by this process and by the children point here
        os.environ["SITE_URL"] = settings.SITE_URL = url
        refserver = self.start_refserver()
        children = [self.start_worker(), self.start_runner_worker(operator, refserver), self.start_granian(host, port)]
        try:
            self.wait_until_up(url, children)
            if not no_seed:
                from registry_site.demo_data import seed
                from submissions.runqueue.demo import seed_runs

                published = seed(url, operator, say=self.say)
                self.say(f"demo data: {published} runs published")
                self.say(f"demo run queue: {seed_runs(operator, say=self.say)} runs published through the local runner host")
            self.banner(url, password)
            if exit_after_seed:
                return
            while all(child.poll() is None for child in children):
                time.sleep(0.5)
            raise CommandError("a child process stopped; see its output above")
        except KeyboardInterrupt:
            self.say("stopping")
        finally:
            for child in children:
                if child.poll() is None:
                    child.send_signal(signal.SIGTERM)
            for child in children:
                try:
                    child.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    child.kill()
            refserver.stop()

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
        return subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "registry_site", "worker", "--loglevel=WARNING",
             "--concurrency=1", "--prefetch-multiplier=1", "--without-gossip", "--without-mingle"],
            env=os.environ.copy(),
        )

    def start_refserver(self):
        """The built-in scripted endpoint, the one address the local runner host may call."""
        from benchpack.refserver import RefServer
        from registry_site.demo_data import DEMO_REPLY, DEMO_TIMING

        refserver = RefServer(responses=[DEMO_REPLY], **DEMO_TIMING).start()
        self.say(f"scripted endpoint: {refserver.url}/v1 (allowlisted on runner host local)")
        return refserver

    def start_runner_worker(self, operator, refserver) -> subprocess.Popen:
        from submissions.runqueue.demo import LOCAL_HOST, ensure_local_host, worker_argv

        ensure_local_host(operator, refserver.url + "/v1")
        self.say(f"runner worker: queue runs.{LOCAL_HOST}, one run at a time")
        return subprocess.Popen(worker_argv(), env={**os.environ, "BENCHPACK_RUNNER_HOST": LOCAL_HOST})

    def start_granian(self, host: str, port: int) -> subprocess.Popen:
        self.say(f"granian: http://{host}:{port}")
        return subprocess.Popen(
            [sys.executable, "-m", "granian", "--interface", "wsgi", "--host", host, "--port", str(port),
             "--workers", "1", "--static-path-route", "/static", "--static-path-mount", str(settings.STATIC_ROOT),
             "registry_site.wsgi:application"],
            env=os.environ.copy(),
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
        self.say("  Ctrl-C stops the web server and the worker")
