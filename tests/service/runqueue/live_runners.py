"""Real runner workers for the live tests: one Celery worker per host queue,
started the way deploy/systemd/benchpack-runner@.service starts them."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tests.service.live import ROOT, LiveService

MODEL = "scripted-demo"
OPS = "ops@example.org"

# Short heartbeats so a killed worker is noticed in seconds, not minutes (but not so
# short that a busy 2-CPU machine with SQLite makes a live worker look dead).
RUNNER_ENV = {"RUN_HEARTBEAT_TIMEOUT_S": "8"}


class RunnerWorker:
    """A runner host's worker as deploy/systemd/benchpack-runner@.service starts it: the host's token and
    broker login, the registry's URL, and nothing of the registry's (no DATABASE_URL, no SECRET_KEY)."""

    def __init__(self, live: LiveService, host: str, name: str, extra_env: dict | None = None, *,
                 token: str | None = None, broker_url: str | None = None, queue: str | None = None):
        from submissions.runqueue.demo import worker_env

        self.host, self.name = host, name
        self.log_path = live.tmp / f"runner-{name}.log"
        self._log = open(self.log_path, "w")
        self.env = worker_env(live.env, host=host, token=token or live.host_tokens[host], registry_url=live.url,
                              broker_url=broker_url or live.runner_broker_url(host), heartbeat_s=1.0)
        self.env.update(extra_env or {})
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "submissions.runqueue.runner.app", "worker",
             "-Q", queue or f"runs.{host}", "--concurrency", "1", "--prefetch-multiplier", "1", "--loglevel=INFO",
             "-n", f"{name}@%h", "--without-gossip", "--without-mingle", "--without-heartbeat"],
            cwd=ROOT, env=self.env, stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True,
        )

    def log(self) -> str:
        return self.log_path.read_text()

    def kill(self) -> None:
        """SIGKILL the worker and its pool child at once, as a crash or the OOM killer would."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(timeout=20)

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill()
        self._log.close()


def wait_until(predicate, timeout_s: float = 60.0, interval_s: float = 0.2, what: str = "condition"):
    deadline = time.monotonic() + timeout_s
    last = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(interval_s)
    raise AssertionError(f"{what} not reached within {timeout_s:.0f} s (last: {last!r})")


class _Redirect(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.server.hits += 1
        self.send_response(307)
        self.send_header("Location", self.server.target)
        self.send_header("Content-Length", "0")
        self.end_headers()


def redirect_server(target: str) -> ThreadingHTTPServer:
    """An endpoint that answers every POST with a redirect to `target`."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Redirect)
    server.daemon_threads = True
    server.target, server.hits = target, 0
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return server


def _this_machine_class() -> str:
    from benchpack.registry.fingerprint import hardware_class
    from benchpack.run.hardware import collect_hardware

    return hardware_class(collect_hardware()) or "unknown-test-machine"


def register(live: LiveService, ref_url: str, hosts: tuple[str, ...], extra: str = "") -> str:
    """Operators, runner hosts allowlisting the scripted endpoint, and an API token for OPS.

    One Django process for all of it (each manage.py start costs seconds on a busy machine).
    `extra` is more Python run in the same shell. Returns the token; each host's two secrets, as
    `runner_host add` printed them, land in `live.host_tokens` and `live.broker_logins`.
    """
    commands = [("make_operator", OPS, "--create", "--password", "ops-password-123")]
    for host in hosts:
        commands += [
            ("runner_host", "add", host, "--owner", "lab@example.org"),
            ("runner_host", "allow-endpoint", host, "ref", "--url", ref_url + "/v1", "--adapter", "openai-chat",
             "--model", f"{MODEL}=none", "--runtime", "benchpack-refserver", "--runtime-version", "scripted",
             "--address", "127.0.0.1"),
            ("runner_host", "allow-pack", host, "runtime-sweep"),
            ("runner_host", "allow-pack", host, "smoke-chat"),
            # The operator approves the machine's hardware class (the workers here run on this machine).
            ("runner_host", "approve", host, "--hardware-class", _this_machine_class()),
        ]
    # The hosts' owner is not an operator: the only operator may approve what they queued (four eyes
    # applies once a site has two operators; docs/service.md).
    script = ("from django.core.management import call_command; from django.contrib.auth import get_user_model\n"
              "get_user_model().objects.create_user(username='lab@example.org', email='lab@example.org')\n")
    script += "".join(f"call_command(*{args!r})\n" for args in commands) + extra
    script += ("from accounts.models import ApiToken; from django.contrib.auth import get_user_model\n"
               f"print(ApiToken.issue(get_user_model().objects.get(email='{OPS}'), 't')[1])")
    output = live.manage("shell", "-c", script)
    live.host_tokens, live.broker_logins = {}, {}
    current = None
    for line in output.splitlines():
        line = line.strip()
        if line.startswith("The secrets of runner host "):
            current = line.split()[5].rstrip(",")
        elif line.startswith("BENCHPACK_HOST_TOKEN=") and current:
            live.host_tokens[current] = line.split("=", 1)[1]
        elif line.startswith("CELERY_BROKER_URL=") and current:
            live.broker_logins[current] = line.split("=", 1)[1]
    assert set(live.host_tokens) == set(hosts), output[-2000:]
    live.runner_broker_url = lambda host: live.broker_logins.get(host) or live.env["CELERY_BROKER_URL"]
    return output.split()[-1]
