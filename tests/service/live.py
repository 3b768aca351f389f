"""A real registry service for end-to-end tests: granian + a Celery worker over
Redis, sharing a database file (or a PostgreSQL database when the suite runs
on PostgreSQL), emails written to an outbox folder the test can read."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _database_url(tmp: Path) -> tuple[str, callable]:
    base = os.environ.get("DATABASE_URL", "")
    if base.startswith("postgres"):
        import psycopg

        name = f"benchpack_e2e_{uuid.uuid4().hex[:8]}"
        admin = base.rsplit("/", 1)[0] + "/postgres"
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')

        def drop():
            with psycopg.connect(admin, autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

        return base.rsplit("/", 1)[0] + "/" + name, drop
    return f"sqlite:///{tmp / 'registry.sqlite3'}", lambda: None


@dataclass
class LiveService:
    tmp: Path
    env: dict
    url: str
    outbox: Path
    worker: subprocess.Popen | None = None
    web: subprocess.Popen | None = None
    logs: list = field(default_factory=list)

    def manage(self, *args: str) -> str:
        proc = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=self.env,
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    def start_worker(self, extra_env: dict | None = None) -> subprocess.Popen:
        log = open(self.tmp / f"worker-{len(self.logs)}.log", "w")
        self.logs.append(log)
        self.worker = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "registry_site", "worker", "--pool=solo", "--concurrency=1",
             "--loglevel=INFO", "--without-gossip", "--without-mingle", "--without-heartbeat"],
            cwd=ROOT, env={**self.env, **(extra_env or {})}, stdout=log, stderr=subprocess.STDOUT,
        )
        return self.worker

    def stop_worker(self, sig=signal.SIGTERM) -> None:
        if self.worker and self.worker.poll() is None:
            self.worker.send_signal(sig)
            try:
                self.worker.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.worker.kill()
                self.worker.wait()

    def emails(self) -> list[str]:
        return [p.read_text() for p in sorted(self.outbox.glob("*.log"))]

    def api(self, token: str) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers={"Authorization": f"Bearer {token}"}, timeout=30)

    def wait_for_state(self, token: str, submission_id: str, wanted: set[str], timeout_s: float = 60) -> dict:
        deadline = time.monotonic() + timeout_s
        with self.api(token) as client:
            while time.monotonic() < deadline:
                body = client.get(f"/api/v1/submissions/{submission_id}/").json()
                if body["state"] in wanted:
                    return body
                time.sleep(0.3)
        raise AssertionError(f"submission {submission_id} still {body['state']} after {timeout_s}s")


def require_redis() -> None:
    """The live tests need a real Redis broker; CI must have one, a laptop may not."""
    import pytest
    import redis

    try:
        redis.Redis(socket_connect_timeout=1).ping()
    except redis.RedisError:
        message = "Redis is not running on 127.0.0.1:6379 (redis-server --daemonize yes)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)


def start_live_service(tmp: Path, redis_db: int = 13):
    require_redis()
    # Two checkouts testing at once on one machine must not flush each other's
    # broker: BENCHPACK_TEST_REDIS_DB_OFFSET moves this checkout's databases.
    redis_db += int(os.environ.get("BENCHPACK_TEST_REDIS_DB_OFFSET", "0"))
    database_url, drop_database = _database_url(tmp)
    outbox = tmp / "var" / "outbox"
    port = free_port()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "registry_site.settings",
        "BENCHPACK_ENV": "local",
        "BENCHPACK_VAR_DIR": str(tmp / "var"),
        "DATABASE_URL": database_url,
        "CELERY_BROKER_URL": f"redis://127.0.0.1:6379/{redis_db}",
        "CELERY_TASK_ALWAYS_EAGER": "false",
        "EMAIL_BACKEND": "django.core.mail.backends.filebased.EmailBackend",
        "SITE_URL": f"http://127.0.0.1:{port}",
        "SUBMISSION_VALIDATING_TIMEOUT_S": "4",
    }
    env.pop("BENCHPACK_TEST_VALIDATION_DELAY_S", None)
    service = LiveService(tmp=tmp, env=env, url=f"http://127.0.0.1:{port}", outbox=outbox)
    outbox.mkdir(parents=True)
    import redis

    redis.Redis(db=redis_db).flushdb()
    service.manage("migrate", "--verbosity=0")
    service.manage("collectstatic", "--noinput", "--verbosity=0")
    web_log = open(tmp / "web.log", "w")
    service.logs.append(web_log)
    service.web = subprocess.Popen(
        [sys.executable, "-m", "granian", "--interface", "wsgi", "--host", "127.0.0.1", "--port", str(port),
         "--workers", "1", "--static-path-route", "/static", "--static-path-mount", str(tmp / "var" / "staticfiles"),
         "registry_site.wsgi:application"],
        cwd=ROOT, env=env, stdout=web_log, stderr=subprocess.STDOUT,
    )
    service.start_worker()
    deadline = time.monotonic() + 60
    while True:
        try:
            if httpx.get(service.url + "/", timeout=2).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline or service.web.poll() is not None:
            raise RuntimeError("granian did not start: " + (tmp / "web.log").read_text()[-2000:])
        time.sleep(0.3)

    def stop():
        service.stop_worker()
        if service.web.poll() is None:
            service.web.terminate()
            service.web.wait(timeout=20)
        for log in service.logs:
            log.close()
        drop_database()

    return service, stop
