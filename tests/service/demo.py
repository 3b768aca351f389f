"""One seeded `manage.py demo` per test session, shared by the demo tests.

Seeding publishes ~90 scripted runs through the real pipeline (~170 s on a
quiet two-core machine); the demo tests used to seed it once each (3.5 times
a pass). Now the first of them to ask starts `manage.py demo` as the README
says (a fresh var/ folder, every port named by a flag) and waits for its
banner; that process — the one that seeded — is then what the others use:

- `demo_service.seeded()`: the seeding run (its console up to the banner, its
  var/ folder), for the assertions on what seeding printed and wrote;
- `demo_service.running()`: a running demo; once a test has stopped the
  current one (Ctrl-C is what several of them test), the next call starts a
  new `manage.py demo` on a copy of the seeded var/ folder, which finds the
  data present and serves in seconds (the path a second `manage.py demo` takes);
- `demo_service.copy_of_seeded_var(dest)`: a private copy to run against.

Registered from tests/conftest.py. The demo modules carry
`xdist_group("demo")` so that one xdist worker runs them all and seeds once.
The demo runs on SQLite whatever DATABASE_URL says (the demo's own default),
which is why CI's PostgreSQL pass leaves these tests out.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.service.live import ROOT, free_port

SEED_TIMEOUT_S = 1500  # ~90 scripted runs at speeds real machines reach (registry_site/demo_physics.py); minutes on a loaded machine
BANNER_END = "Ctrl-C stops"
# What the demo must not inherit from the test session: it chooses its own database (SQLite in its
# var/), broker (a folder in var/) and settings, as on a newcomer's machine.
STRIPPED = {"DATABASE_URL", "CELERY_BROKER_URL", "DJANGO_SETTINGS_MODULE", "DEBUG"}


def demo_env(var: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in STRIPPED}
    env.update({"BENCHPACK_VAR_DIR": str(var), "BENCHPACK_ENV": "local", "PYTHONUNBUFFERED": "1"})
    return env


def copy_var(source: Path, dest: Path) -> None:
    """A demo var/ folder another `manage.py demo` can start from, taken while the source may be serving:
    the database through SQLite's backup API (a consistent snapshot, WAL included), the rest as files. Not
    the source's broker queue (its in-flight messages are its own) nor its logs."""
    shutil.copytree(source, dest, ignore=shutil.ignore_patterns("registry.sqlite3*", "broker", "log"))
    with sqlite3.connect(source / "registry.sqlite3") as src, sqlite3.connect(dest / "registry.sqlite3") as dst:
        src.backup(dst)
    src.close()
    dst.close()


class DemoService:
    def __init__(self, base: Path):
        self.base = base
        self.started: list[dict] = []
        self._seeded: dict | None = None
        self._current: dict | None = None

    def seeded(self) -> dict:
        if self._seeded is None:
            self.running()
        return self._seeded

    def running(self) -> dict:
        if self._current is None or self._current["proc"].poll() is not None:
            self._current = self._start()
        return self._current

    def copy_of_seeded_var(self, dest: Path) -> Path:
        copy_var(self.seeded()["var"], dest)
        return dest

    def _start(self) -> dict:
        root = self.base / f"demo-{len(self.started) + 1}"
        root.mkdir(parents=True)
        var = root / "var"
        if self._seeded is not None:
            copy_var(self._seeded["var"], var)
        ports = {"port": free_port(), "refserver": free_port(), "seed": free_port()}
        log = root / "console.log"
        proc = subprocess.Popen(
            [sys.executable, "manage.py", "demo", "--port", str(ports["port"]),
             "--refserver-port", str(ports["refserver"]), "--seed-port", str(ports["seed"])],
            cwd=ROOT, env=demo_env(var), stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True)
        demo = {"url": f"http://127.0.0.1:{ports['port']}", "log": log, "ports": ports, "var": var, "proc": proc}
        self.started.append(demo)
        deadline = time.monotonic() + SEED_TIMEOUT_S
        while BANNER_END not in (console := log.read_text(errors="replace")):
            assert proc.poll() is None, console[-3000:]
            assert time.monotonic() < deadline, console[-3000:]
            time.sleep(0.2)
        demo["console"] = console  # what it printed up to and including its banner
        demo["password"] = re.search(r"operator login: \S+ / (\S+)", console).group(1)
        if self._seeded is None:
            self._seeded = demo
        return demo

    def stop_all(self) -> None:
        for demo in self.started:
            proc = demo["proc"]
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C, as a terminal sends it
                try:
                    proc.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()


@pytest.fixture(scope="session")
def demo_service(tmp_path_factory):
    service = DemoService(tmp_path_factory.mktemp("demo"))
    try:
        yield service
    finally:
        service.stop_all()
