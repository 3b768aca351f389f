"""The registry under concurrent use and faults, with real processes: granian,
Celery workers over Redis, the default SQLite database (or PostgreSQL when the
suite runs on it).

- 32 distinct uploads at once, two worker processes: every one reaches a final
  state within a minute, no "database is locked", no 500.
- A bundle whose worker dies every time ends `failed` after the capped attempts.
- Broker down at upload: 201, and the task is sent when the broker is back.
- SMTP down at upload: 201, the email waits in the queue and goes out later.
- A body declared too large is refused before it is sent.
"""

from __future__ import annotations

import json
import socket
import threading
import time

import httpx
import pytest

from tests.service.live import free_port, start_live_service
from tests.service.test_e2e_worker_kill import issue_token

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def _distinct_archives(tmp_path, count: int) -> list[bytes]:
    from tests.hostile import _put, template_bundle
    from tests.service.test_hostile_values import _archive

    bundle = template_bundle(tmp_path / "template")
    archives = []
    for number in range(count):
        _put(bundle, "run-metadata.json", json.dumps({"runtime": {"name": "llama.cpp"}, "notes": f"upload {number}"}).encode())
        archives.append(_archive(bundle))
    return archives


def _post_all(live, token: str, archives: list[bytes]) -> list[httpx.Response]:
    responses: list = [None] * len(archives)
    barrier = threading.Barrier(len(archives))

    def post(index: int):
        with live.api(token) as client:
            barrier.wait()
            responses[index] = client.post("/api/v1/submissions/",
                                           files={"archive": (f"b{index}.tar.gz", archives[index])}, timeout=60)

    threads = [threading.Thread(target=post, args=(i,)) for i in range(len(archives))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return responses


def test_32_concurrent_uploads_with_two_worker_processes_all_finish(tmp_path):
    live, stop = start_live_service(tmp_path / "live", redis_db=12, worker=False,
                                    env_overrides={"SUBMISSION_RATE_LIMIT_PER_HOUR": "100",
                                                   "SUBMISSION_MAX_CONCURRENT_UPLOADS": "32"})
    try:
        live.start_worker(pool="prefork", concurrency=2, beat=True)  # as deploy/ runs it, plus beat
        token = issue_token(live)
        archives = _distinct_archives(tmp_path, 32)
        started = time.monotonic()
        responses = _post_all(live, token, archives)
        assert [r.status_code for r in responses] == [201] * 32, [r.text[:200] for r in responses if r.status_code != 201]
        ids = [r.json()["id"] for r in responses]
        finals = {}
        deadline = started + 60
        with live.api(token) as client:
            while len(finals) < len(ids) and time.monotonic() < deadline:
                for submission_id in ids:
                    if submission_id not in finals:
                        state = client.get(f"/api/v1/submissions/{submission_id}/").json()["state"]
                        if state in {"quarantined", "invalid", "failed"}:
                            finals[submission_id] = state
                time.sleep(0.5)
        elapsed = time.monotonic() - started
        print(f"\n32 uploads: all final after {elapsed:.1f} s")
        assert len(finals) == 32, f"{32 - len(finals)} not final after 60 s"
        assert set(finals.values()) == {"quarantined"}
        log = live.worker_log() + (live.tmp / "web.log").read_text()
        assert "database is locked" not in log
        assert " 500 " not in (live.tmp / "web.log").read_text()
    finally:
        stop()


def test_a_bundle_whose_worker_dies_every_time_ends_failed(tmp_path, bundle_archive):
    live, stop = start_live_service(tmp_path / "live", redis_db=13, worker=False)
    try:
        # prefork: the pool process dies (SIGKILL, as the OOM killer does), the worker survives
        # and, with reject_on_worker_lost, puts the message back each time
        live.start_worker({"BENCHPACK_TEST_VALIDATION_CRASH": "1"}, pool="prefork", concurrency=1, beat=True)
        token = issue_token(live)
        archive = bundle_archive()
        with live.api(token) as client:
            submission = client.post("/api/v1/submissions/", files={"archive": (archive.name, archive.read_bytes())}).json()
        final = live.wait_for_state(token, submission["id"], {"quarantined", "invalid", "failed"}, timeout_s=90)
        assert final["state"] == "failed"
        assert final["error_codes"] == ["validation.attempts-exhausted"]
        attempts = live.manage("shell", "-c", "from submissions.models import Submission;"
                               f"print(Submission.objects.get(pk='{submission['id']}').validation_attempts)")
        assert attempts.split()[-1] == "3"
        assert live.worker.poll() is None  # the worker itself lives on
        live.wait_for_email("could not be validated")
        # not a verdict: the same bytes may be sent again
        live.stop_worker()
        live.start_worker(beat=True)
        with live.api(token) as client:
            again = client.post("/api/v1/submissions/", files={"archive": (archive.name, archive.read_bytes())})
        assert again.status_code == 201
        assert live.wait_for_state(token, again.json()["id"], {"quarantined"})["state"] == "quarantined"
    finally:
        stop()


def test_an_upload_while_the_broker_is_down_is_kept_and_validated_later(tmp_path, bundle_archive):
    live, stop = start_live_service(tmp_path / "live", redis_db=12, worker=False)
    try:
        token = issue_token(live)
        dead_broker = f"redis://127.0.0.1:{free_port()}/0"
        live.restart_web({"CELERY_BROKER_URL": dead_broker})
        archive = bundle_archive()
        started = time.monotonic()
        with live.api(token) as client:
            response = client.post("/api/v1/submissions/", files={"archive": (archive.name, archive.read_bytes())})
        answered_s = time.monotonic() - started
        assert response.status_code == 201, response.text
        assert response.json()["state"] == "received"
        print(f"\nupload answered in {answered_s:.1f} s with the broker down")
        assert answered_s < 15
        # a retry of the same bytes points at the kept submission instead of failing
        with live.api(token) as client:
            retry = client.post("/api/v1/submissions/", files={"archive": (archive.name, archive.read_bytes())})
        assert retry.status_code == 409 and retry.json()["submission"]["id"] == response.json()["id"]
        # the broker is back (the worker and its beat use the real one): the reaper sends the task
        live.start_worker(beat=True)
        final = live.wait_for_state(token, response.json()["id"], {"quarantined", "invalid", "failed"}, timeout_s=60)
        assert final["state"] == "quarantined"
    finally:
        stop()


def test_an_upload_while_smtp_is_down_is_answered_and_its_email_sent_later(tmp_path, bundle_archive):
    dead_smtp = {"EMAIL_BACKEND": "django.core.mail.backends.smtp.EmailBackend", "EMAIL_HOST": "127.0.0.1",
                 "EMAIL_PORT": str(free_port())}
    live, stop = start_live_service(tmp_path / "live", redis_db=13, env_overrides=dead_smtp, worker=False)
    try:
        live.start_worker(beat=True)
        token = issue_token(live)
        archive = bundle_archive()
        with live.api(token) as client:
            response = client.post("/api/v1/submissions/", files={"archive": (archive.name, archive.read_bytes())})
        assert response.status_code == 201, response.text
        assert live.wait_for_state(token, response.json()["id"], {"quarantined"})["state"] == "quarantined"
        time.sleep(3)  # a delivery run or two fail against the dead server
        pending = live.manage("shell", "-c", "from submissions.models import QueuedEmail as Q;"
                              "print(Q.objects.filter(sent_at__isnull=True).count(), max(Q.objects.values_list('attempts', flat=True)))")
        unsent, attempts = map(int, pending.split()[-2:])
        assert unsent >= 1 and attempts >= 1
        assert live.emails() == []
        # SMTP is back (here: the worker delivers to the outbox folder instead)
        live.stop_worker()
        live.start_worker({"EMAIL_BACKEND": "django.core.mail.backends.filebased.EmailBackend"}, beat=True)
        live.wait_for_email("Submission received")
    finally:
        stop()


def _raw_request(url: str, head: str) -> bytes:
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(head.encode())
        sock.settimeout(10)
        return sock.recv(4096)


def test_a_body_declared_too_large_is_refused_before_it_is_sent(tmp_path):
    live, stop = start_live_service(tmp_path / "live", redis_db=12, worker=False)
    try:
        for path in ("/accounts/login/", "/api/v1/submissions/", "/submissions/new/"):
            head = (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: multipart/form-data; boundary=x\r\n"
                    f"Content-Length: {400 * 1024 * 1024}\r\nConnection: close\r\n\r\n")
            started = time.monotonic()
            answer = _raw_request(live.url, head)  # 400 MiB declared, not one byte sent
            assert answer.startswith(b"HTTP/1.1 413") or (path == "/submissions/new/" and answer.startswith(b"HTTP/1.1 302")), (path, answer[:200])
            assert time.monotonic() - started < 5
    finally:
        stop()
