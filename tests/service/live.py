"""A real registry service for end-to-end tests: granian + a Celery worker over
Redis, sharing a database file (or a PostgreSQL database when the suite runs
on PostgreSQL), emails written to an outbox folder the test can read."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from tests import processes, workers
from tests.environment import unavailable

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _postgres_admin_url() -> str | None:
    base = os.environ.get("DATABASE_URL", "")
    return base.rsplit("/", 1)[0] + "/postgres" if base.startswith("postgres") else None


def _create_database(tmp: Path, template: str | None = None) -> tuple[str, callable]:
    """A database of its own: an empty one (`template` None) or a copy of the migrated template.

    SQLite: a file in `tmp`, copied with SQLite's backup API (it reads through a WAL left behind, where a
    file copy would not). PostgreSQL: `CREATE DATABASE … TEMPLATE`, a copy of the template's files."""
    admin = _postgres_admin_url()
    if admin is not None:
        import psycopg

        name = f"benchpack_e2e_{uuid.uuid4().hex[:8]}"
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"' + (f' TEMPLATE "{template}"' if template else ""))

        def drop():
            with psycopg.connect(admin, autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

        return admin.rsplit("/", 1)[0] + "/" + name, drop
    path = tmp / "registry.sqlite3"
    if template:
        import sqlite3

        with sqlite3.connect(template) as source, sqlite3.connect(path) as copy:
            source.backup(copy)
        source.close()
        copy.close()
    return f"sqlite:///{path}", lambda: None


@dataclass
class _Template:
    """What `migrate` and `collectstatic` made once in this process, for every live service to copy."""

    database: str  # the SQLite file, or the PostgreSQL database's name
    static_root: Path
    drop: Callable[[], None]  # removes its files and its PostgreSQL database


_TEMPLATE: _Template | None = None


def drop_template() -> None:
    """Remove this process's template: at the session's end (tests/conftest.py), or at exit."""
    global _TEMPLATE
    template, _TEMPLATE = _TEMPLATE, None
    if template is not None:
        template.drop()


def _template(env: dict) -> _Template:
    """The migrated database and collected static files, made once per test process (each xdist worker its
    own: nothing is shared between workers) by the same two commands every live start ran itself before,
    ~2.5 s of CPU a start (two Django processes). Built with a service's environment before its overrides,
    with a var/, database and site of its own; each service's own `migrate` then applies what its settings
    add (start_live_service)."""
    global _TEMPLATE
    if _TEMPLATE is None:
        import atexit
        import tempfile

        root = Path(tempfile.mkdtemp(prefix="benchpack-live-template-"))
        database_url, drop_database = _create_database(root)
        build = {**env, "BENCHPACK_VAR_DIR": str(root / "var"), "DATABASE_URL": database_url,
                 "SITE_URL": "http://127.0.0.1:1"}
        for command in (("migrate", "--verbosity=0"), ("collectstatic", "--noinput", "--verbosity=0")):
            proc = subprocess.run([sys.executable, "manage.py", *command], cwd=ROOT, env=build,
                                  capture_output=True, text=True, timeout=120)
            if proc.returncode != 0:
                drop_database()
                shutil.rmtree(root, ignore_errors=True)
                raise RuntimeError(f"the live services' template: manage.py {command[0]} failed: {proc.stderr}")
        name = database_url.rsplit("/", 1)[1] if database_url.startswith("postgres") else str(root / "registry.sqlite3")

        def drop():
            drop_database()
            shutil.rmtree(root, ignore_errors=True)

        atexit.register(drop_template)
        _TEMPLATE = _Template(database=name, static_root=root / "var" / "staticfiles", drop=drop)
    return _TEMPLATE


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

    def start_worker(self, extra_env: dict | None = None, pool: str = "solo", concurrency: int = 1,
                     beat: bool = False) -> subprocess.Popen:
        """A real Celery worker; `beat=True` embeds beat (the reaper and email runs), as the demo does."""
        log = open(self.tmp / f"worker-{len(self.logs)}.log", "w")
        self.logs.append(log)
        extra = ["-B", f"--schedule={self.tmp / 'celerybeat-schedule'}"] if beat else []
        self.worker = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "registry_site", "worker", f"--pool={pool}",
             f"--concurrency={concurrency}", "--prefetch-multiplier=1", "--loglevel=INFO", "--without-gossip",
             "--without-mingle", "--without-heartbeat", *extra],
            cwd=ROOT, env={**self.env, **(extra_env or {})}, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        return self.worker

    def restart_web(self, extra_env: dict | None = None) -> None:
        if self.web is not None and self.web.poll() is None:
            self.web.terminate()
            self.web.wait(timeout=20)
        self.web = _start_web(self, {**self.env, **(extra_env or {})})

    def wait_for_email(self, needle: str, timeout_s: float = 30) -> str:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for message in self.emails():
                if needle in message:
                    return message
            time.sleep(0.3)
        raise AssertionError(f"no email with {needle!r} after {timeout_s}s: {[m[:200] for m in self.emails()]}")

    def worker_log(self) -> str:
        return "".join(p.read_text(errors="replace") for p in sorted(self.tmp.glob("worker-*.log")))

    def stop_worker(self, sig=signal.SIGTERM) -> None:
        """Stop the worker and its pool and beat processes (its own process group)."""
        if self.worker is None:
            return
        if self.worker.poll() is None:
            self.worker.send_signal(sig)
            try:
                self.worker.wait(timeout=20)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(self.worker.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
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
    import redis

    try:
        redis.Redis(port=workers.redis_port(), socket_connect_timeout=1).ping()
    except redis.RedisError:
        message = f"Redis is not running on 127.0.0.1:{workers.redis_port()} (redis-server --daemonize yes)"
        unavailable(message)


def start_live_service(tmp: Path, redis_db: int = 13, env_overrides: dict | None = None, worker: bool = True):
    require_redis()
    # Parallel workers, and two checkouts testing at once on one machine
    # (BENCHPACK_TEST_REDIS_DB_OFFSET), must not flush each other's broker.
    redis_db = workers.redis_db(redis_db)
    outbox = tmp / "var" / "outbox"
    port = free_port()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "registry_site.settings",
        "BENCHPACK_ENV": "local",
        "BENCHPACK_VAR_DIR": str(tmp / "var"),
        "CELERY_BROKER_URL": workers.redis_url(redis_db),
        "CELERY_TASK_ALWAYS_EAGER": "false",
        "EMAIL_BACKEND": "django.core.mail.backends.filebased.EmailBackend",
        "SITE_URL": f"http://127.0.0.1:{port}",
        "SUBMISSION_VALIDATING_TIMEOUT_S": "4",
        # fast heartbeats so a dead worker is noticed in seconds (defaults: 5 s / 30 s / 10 s)
        "SUBMISSION_HEARTBEAT_S": "1",
        "SUBMISSION_HEARTBEAT_TIMEOUT_S": "5",
        "SUBMISSION_REAPER_INTERVAL_S": "2",
        "EMAIL_DELIVERY_INTERVAL_S": "2",
    }
    env.pop("BENCHPACK_TEST_VALIDATION_DELAY_S", None)
    template = _template(env)  # the same for every service of this process, whatever the first one overrides
    env.update(env_overrides or {})
    outbox.mkdir(parents=True)
    database_url, drop_database = _create_database(tmp, template.database)
    env["DATABASE_URL"] = database_url
    service = LiveService(tmp=tmp, env=env, url=f"http://127.0.0.1:{port}", outbox=outbox)
    import redis

    redis.Redis(port=workers.redis_port(), db=redis_db).flushdb()
    # The template's copy, then `migrate` with this service's settings, as deploy/deploy.sh runs it on every
    # deploy: nothing left to apply, and its post-migrate step names this service's SITE_URL in the Sites row
    # and creates the cache table if this service's cache needs it (registry_site/apps.py).
    shutil.copytree(template.static_root, tmp / "var" / "staticfiles")
    service.manage("migrate", "--verbosity=0")
    service.web = _start_web(service, env)
    if worker:
        service.start_worker()

    def stop():
        service.stop_worker()
        # granian kills a worker that has not stopped within 10 s (--workers-kill-timeout)
        stopped = processes.stop(service.web, 30)
        for log in service.logs:
            log.close()
        drop_database()
        if not stopped:
            raise AssertionError("granian did not stop within 30 s of SIGTERM; its log ends:\n"
                                 + (service.tmp / "web.log").read_text()[-2000:])

    return service, stop


def _start_web(service: LiveService, env: dict) -> subprocess.Popen:
    port = service.url.rsplit(":", 1)[1]
    web_log = open(service.tmp / "web.log", "a")
    service.logs.append(web_log)
    web = subprocess.Popen(
        [sys.executable, "-m", "granian", "--interface", "wsgi", "--host", "127.0.0.1", "--port", port,
         # static files through Django (WhiteNoise), as deploy/systemd/benchpack-web.service serves them
         "--workers", "1", "--workers-kill-timeout", "10", "registry_site.wsgi:application"],
        cwd=ROOT, env=env, stdout=web_log, stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 60
    while True:
        try:
            if httpx.get(service.url + "/", timeout=2).status_code == 200:
                return web
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline or web.poll() is not None:
            # Stopped here, worker included (SIGTERM: granian stops its worker): the caller never gets `web`,
            # so nothing else would, and a granian that was only slow to answer went on serving after the test.
            processes.stop(web, 30)
            raise RuntimeError("granian did not start: " + (service.tmp / "web.log").read_text()[-2000:])
        time.sleep(0.3)
