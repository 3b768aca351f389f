"""Ctrl-C on `manage.py demo`, as a terminal sends it (SIGINT to the whole
foreground process group), at start-up, while seeding and while serving:
every child stops every time, the port is free, and nothing but a short
"stopping" is printed. While serving, visitors get the site's own 404 page
(DEBUG off) and static files."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import psutil
import pytest

from tests.service.live import ROOT, free_port

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.xdist_group("demo")]


def _start(var_dir: Path, port: int, log: Path) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "CELERY_BROKER_URL", "DJANGO_SETTINGS_MODULE", "DEBUG"}}
    env.update({"BENCHPACK_VAR_DIR": str(var_dir), "BENCHPACK_ENV": "local", "PYTHONUNBUFFERED": "1"})
    # its own process group, like a shell's foreground job, so the test can signal the group
    return subprocess.Popen([sys.executable, "manage.py", "demo", "--port", str(port)], cwd=ROOT, env=env,
                            stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True)


def _wait_for(log: Path, text: str, proc: subprocess.Popen, timeout_s: float = 900) -> None:
    # "serving" waits for the whole seeding: ~90 scripted runs, minutes on a loaded CI machine
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if text in log.read_text(errors="replace"):
            return
        assert proc.poll() is None, log.read_text()[-3000:]
        time.sleep(0.05)
    raise AssertionError(f"{text!r} not printed: {log.read_text()[-3000:]}")


def _descendants(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def _port_free(port: int) -> bool:
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def _ctrl_c(proc: subprocess.Popen, log: Path, port: int, moment: str) -> None:
    children = _descendants(proc.pid)
    os.killpg(proc.pid, signal.SIGINT)  # what the terminal does on Ctrl-C
    try:
        code = proc.wait(timeout=40)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise AssertionError(f"{moment}: demo did not stop within 40 s: {log.read_text()[-3000:]}") from None
    output = log.read_text(errors="replace")
    gone = psutil.wait_procs(children, timeout=10)[1]
    assert gone == [], f"{moment}: children still running: {[p.pid for p in gone]}"
    assert _port_free(port), f"{moment}: port {port} still held"
    assert code == 130, (moment, code, output[-2000:])
    assert "Traceback" not in output, f"{moment}: {output[-3000:]}"
    assert "a child process stopped" not in output, moment
    assert "stopping" in output
    # the children's shutdown (Celery's warm shutdown, its ERROR lines) goes to var/log/, not the console
    assert "ERROR" not in output and "celery@" not in output, f"{moment}: {output[-3000:]}"


def test_ctrl_c_stops_everything_quietly_at_every_moment(tmp_path, demo_service):
    # "serving": the session's demo (tests/service/demo.py), serving after it seeded; "serving again": a
    # second `manage.py demo` on that demo's data, which finds it present and serves without seeding.
    moments = [
        ("start-up", tmp_path / "var-a", "database:"),
        # six scripted runs in flight at once (registry_site.demo_data.SEED_PARALLEL_RUNS)
        ("seeding", tmp_path / "var-b", "demo: desktop-django-wrap:"),
        ("serving", None, "Benchpack registry is running"),
        ("serving again", None, "Benchpack registry is running"),
        ("seeding, first pack", tmp_path / "var-c", "demo: smoke-chat:"),
    ]
    for moment, var_dir, cue in moments:
        if var_dir is None:
            served = demo_service.running()
            port, log, proc = served["ports"]["port"], served["log"], served["proc"]
        else:
            port = free_port()
            log = tmp_path / f"demo-{moment.replace(' ', '-')}.log"
            proc = _start(var_dir, port, log)
        try:
            _wait_for(log, cue, proc)
            if moment == "serving":
                url = f"http://127.0.0.1:{port}"
                missing = httpx.get(url + "/no/such/page/", timeout=10)
                assert missing.status_code == 404
                assert "Benchpack registry" in missing.text and "URLconf" not in missing.text  # DEBUG is off
                assert httpx.get(url + "/static/benchpack/site.css", timeout=10).status_code == 200
                assert "Content-Security-Policy" in missing.headers
            _ctrl_c(proc, log, port, moment)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
