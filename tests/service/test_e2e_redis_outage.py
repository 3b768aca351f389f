"""Redis stopped under a live registry (issue 22 §2): the cache and the broker on one Redis server, as
deploy/benchpack.env.example has them, and that server stopped for a while and started again.

A real redis-server on a port of its own (never the shared one), granian and a Celery worker with beat.
While Redis is away no request answers 500: uploads are accepted (201, validated once Redis is back),
logins work (right and wrong password), run requests are queued for the reaper, token reads and uncached
anonymous reads answer; the API throttle still holds, per process; the web log says so a few times, not
once per request, and never with a traceback.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from tests.environment import unavailable
from tests.service.live import free_port, start_live_service
from tests.service.runqueue.conftest import MODEL
from tests.service.runqueue.live_runners import OPS, register
from tests.service.test_e2e_faults import _distinct_archives

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


class RedisServer:
    def __init__(self, tmp: Path):
        self.port = free_port()
        self.tmp = tmp
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            unavailable("redis-server is not installed (apt install redis-server)")
        self.proc = subprocess.Popen([binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                                      "--appendonly", "no", "--dir", str(self.tmp)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        import redis

        deadline = time.monotonic() + 10
        while True:
            try:
                redis.Redis(port=self.port, socket_connect_timeout=0.5).ping()
                return
            except redis.RedisError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)


def _login(url: str, email: str, password: str) -> httpx.Response:
    with httpx.Client(base_url=url, timeout=30) as browser:
        form = browser.get("/accounts/login/")
        assert form.status_code == 200, form.text[:300]
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text).group(1)
        return browser.post("/accounts/login/", data={"csrfmiddlewaretoken": token, "login": email,
                                                      "password": password},
                            headers={"Referer": url + "/accounts/login/"})


def test_no_request_answers_500_while_redis_is_stopped(tmp_path):
    redis_server = RedisServer(tmp_path)
    redis_server.start()
    redis_url = f"redis://127.0.0.1:{redis_server.port}"
    live, stop = start_live_service(tmp_path / "live", worker=False, env_overrides={
        "CACHE_URL": f"{redis_url}/0", "CELERY_BROKER_URL": f"{redis_url}/1",
        "SUBMISSION_RATE_LIMIT_PER_HOUR": "100", "API_ANON_RATE": "30/minute",
        "CATALOGUE_RESPONSE_CACHE": "false",
    })
    try:
        live.start_worker(beat=True)
        token = register(live, "http://127.0.0.1:9", ("gpu-a",))
        archives = _distinct_archives(tmp_path, 4)
        with live.api(token) as api:
            before = api.post("/api/v1/submissions/", files={"archive": ("b0.tar.gz", archives[0])})
            assert before.status_code == 201, before.text
        assert _login(live.url, OPS, "ops-password-123").status_code == 302

        redis_server.stop()
        stopped_at = time.monotonic()
        codes: list[tuple[str, int]] = []
        with live.api(token) as api:
            uploads = [api.post("/api/v1/submissions/", files={"archive": (f"b{n}.tar.gz", archives[n])})
                       for n in (1, 2, 3)]
            codes += [("upload", r.status_code) for r in uploads]
            read = api.get(f"/api/v1/submissions/{uploads[0].json()['id']}/")
            codes.append(("token read", read.status_code))
            run_request = api.post("/api/v1/run-requests/", json={"host": "gpu-a", "endpoint": "ref", "model": MODEL,
                                                                   "pack": "smoke-chat"})
            codes.append(("run request", run_request.status_code))
        right = _login(live.url, OPS, "ops-password-123")
        wrong = _login(live.url, OPS, "not-the-password")
        codes += [("login", right.status_code), ("wrong password", wrong.status_code)]
        # The throttle counts in fixed one-minute windows (throttles.py): start the reads early in a window so
        # that all 40 fall in one, and check what crossed a boundary anyway window by window.
        if 60 - time.time() % 60 < 30:
            time.sleep(60 - time.time() % 60 + 0.2)
        timed = [(int(time.time() // 60), httpx.get(f"{live.url}/api/v1/runs/?page_size={1 + n % 20}",
                                                   timeout=30).status_code) for n in range(40)]
        anonymous = [code for _, code in timed]
        codes += [("anonymous read", code) for code in anonymous]

        assert [c for c in codes if c[1] >= 500] == []
        assert [r.json()["state"] for r in uploads] == ["received"] * 3
        assert read.status_code == 200 and read.json()["state"] == "received"
        assert run_request.status_code == 201, run_request.text
        assert run_request.json()["state"] == "queued"
        assert right.status_code == 302 and right.headers["location"] != "/accounts/login/"
        assert wrong.status_code == 200 and "not correct" in wrong.text
        # the throttle held per process (30/minute): fail open to a local limit, not to none
        for window in {w for w, _ in timed}:
            assert [code for w, code in timed if w == window].count(200) <= 30, timed
        assert anonymous.count(429) >= 10 or len({w for w, _ in timed}) > 1, timed

        time.sleep(max(0.0, 5 - (time.monotonic() - stopped_at)))  # the background writer retries meanwhile
        redis_server.start()  # empty, as a restarted Redis without persistence is: the queue is gone
        ids = [r.json()["id"] for r in [before, *uploads]]
        finals = {i: live.wait_for_state(token, i, {"quarantined", "invalid", "failed"}, timeout_s=90)["state"]
                  for i in ids}
        assert set(finals.values()) == {"quarantined"}, finals
        web_log = (live.tmp / "web.log").read_text(errors="replace")
        outage_lines = [line for line in web_log.splitlines() if "is unreachable" in line]
        assert 1 <= len(outage_lines) <= 3, outage_lines  # once a minute per process, not per request
        assert "Traceback" not in web_log, web_log[-3000:]
        assert "could not write throttle counts" not in web_log
        assert "answers again" in web_log
    finally:
        stop()
        redis_server.stop()
