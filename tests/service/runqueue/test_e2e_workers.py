"""Run requests executed by real Celery workers over Redis: two runner hosts on two
queues, the scripted reference endpoint, granian serving the API, and the
validation worker filing results for review.

Routing, live progress, cancel, the time limit, SIGKILL mid-run (retried once,
then "worker lost"), a run longer than a (misconfigured) visibility timeout,
an endpoint that is down, a redirect, a name resolving off the allowlist,
and the broker down when a request is created.
"""

from __future__ import annotations

import subprocess
import sys
import time

import httpx
import pytest

from benchpack.refserver.server import RefServer
from tests.service.live import ROOT, free_port, start_live_service
from tests.service.runqueue.live_runners import MODEL, RUNNER_ENV, RunnerWorker, redirect_server, register, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


@pytest.fixture(scope="module")
def ref():
    with RefServer(ttft_s=0.005, itl_s=0.001) as server:
        yield server


@pytest.fixture(scope="module")
def live(tmp_path_factory, ref):
    # The registry decides when a run is lost (its RUN_HEARTBEAT_TIMEOUT_S), so it gets the short timeout.
    service, stop = start_live_service(tmp_path_factory.mktemp("runqueue"), redis_db=12, env_overrides=RUNNER_ENV)
    service.token = register(service, ref.url, ("gpu-a", "gpu-b"))
    service.runners = {}
    yield service
    for runner in service.runners.values():
        runner.stop()
    stop()


def start_runner(live, host: str, name: str | None = None, **env) -> RunnerWorker:
    runner = RunnerWorker(live, host, name or host, env)
    live.runners[runner.name] = runner
    return runner


def ensure_runner(live, host: str) -> RunnerWorker:
    runner = live.runners.get(host)
    if runner is None or runner.proc.poll() is not None:
        runner = start_runner(live, host)
    with live.api(live.token) as api:
        wait_until(lambda: any(h["name"] == host and h["online"] and h["worker"].startswith(runner.name + "@")
                               for h in api.get("/api/v1/runner-hosts/").json()),
                   timeout_s=90, what=f"{host} online with worker {runner.name}")
    return runner


def queue(live, host: str, pack: str = "runtime-sweep", endpoint: str = "ref", **options) -> dict:
    with live.api(live.token) as api:
        response = api.post("/api/v1/run-requests/", json={"host": host, "endpoint": endpoint, "model": MODEL,
                                                            "pack": pack, **options})
    assert response.status_code == 201, response.text
    return response.json()


def get(live, request_id: str) -> dict:
    with live.api(live.token) as api:
        return api.get(f"/api/v1/run-requests/{request_id}/").json()


def wait_for(live, request_id: str, states: set[str], timeout_s: float = 90) -> dict:
    return wait_until(lambda: (lambda body: body if body["state"] in states else None)(get(live, request_id)),
                      timeout_s=timeout_s, what=f"run request {request_id} in {states}")


def submissions(live) -> list[dict]:
    with live.api(live.token) as api:
        return api.get("/api/v1/submissions/").json()


def slow(ref, seconds_per_execution: float):
    """runtime-sweep asks for at most 128 tokens; spread them over the wanted time."""
    ref.configure(responses=[{"tokens": 100}], ttft_s=0.005, itl_s=seconds_per_execution / 100)
    ref.reset()


def test_each_request_runs_on_its_own_host_with_live_progress_and_goes_to_review(live, ref):
    runner_a, runner_b = ensure_runner(live, "gpu-a"), ensure_runner(live, "gpu-b")
    slow(ref, 0.25)
    created = time.monotonic()
    on_a = queue(live, "gpu-a")
    on_b = queue(live, "gpu-b", pack="smoke-chat")

    seen = wait_until(lambda: (lambda b: b if 0 < b["progress"]["done"] < b["progress"]["total"] else None)(
        get(live, on_a["id"])), what="progress mid-run")
    assert seen["state"] == "running" and seen["progress"]["total"] == 12 and seen["progress"]["current"]
    assert seen["log_tail"]
    finished_a = wait_for(live, on_a["id"], {"finished", "failed", "cancelled"})
    finished_b = wait_for(live, on_b["id"], {"finished", "failed", "cancelled"})
    assert finished_a["state"] == finished_b["state"] == "finished", (finished_a["failure_reason"], finished_b["failure_reason"])
    claimed = [e for e in finished_a["events"] if e["to_state"] == "running"]
    assert len(claimed) == 1 and claimed[0]["worker"].startswith("gpu-a@")
    assert [e for e in finished_b["events"] if e["to_state"] == "running"][0]["worker"].startswith("gpu-b@")
    assert len(finished_a["rows"]) == 9 and all(row["ok"] for row in finished_a["rows"])

    # The result goes through the validation worker into the review queue.
    submission_id = finished_a["submission"]["id"]
    quarantined = live.wait_for_state(live.token, submission_id, {"quarantined", "invalid"}, timeout_s=60)
    # The bundle's provenance is the host's claim; the registry earns the published value on approval.
    assert quarantined["state"] == "quarantined" and quarantined["provenance"] == "self-reported"
    validated = time.monotonic()
    events = {e["to_state"]: e["created_at"] for e in quarantined["events"]}
    print(f"\nend to end: {validated - created:.1f} s; worker timings {finished_a['timings']}; "
          f"submission events {events}")

    # A copy of A's message put on B's queue is refused by B: it never runs there.
    # A copy of A's message put on B's queue is refused: B's token cannot claim A's request (403).
    live.manage("shell", "-c", "from submissions.runqueue.broker import send_task;"
                               f"send_task('benchpack.runner.execute_run_request', args=['{on_a['id']}'], "
                               "queue='runs.gpu-b')")
    wait_until(lambda: "delivery refused" in runner_b.log(), what="B's refusal")
    assert "not assigned to runner host gpu-b" in runner_b.log()
    assert get(live, on_a["id"])["state"] == "finished" and get(live, on_a["id"])["attempts"] == 1
    assert runner_a.proc.poll() is None and runner_b.proc.poll() is None


@pytest.mark.exclusive  # asserts a 2.5 s bound
def test_cancel_stops_a_real_worker_within_two_seconds_and_nothing_is_submitted(live, ref):
    ensure_runner(live, "gpu-a")
    slow(ref, 1.5)
    before = len(submissions(live))
    request = queue(live, "gpu-a")
    wait_until(lambda: get(live, request["id"])["rows"], what="a first row")
    with live.api(live.token) as api:
        asked = time.monotonic()
        assert api.post(f"/api/v1/run-requests/{request['id']}/cancel/").json()["cancel"] == "requested"
    final = wait_for(live, request["id"], {"cancelled", "failed", "finished"}, timeout_s=10)
    stopped = time.monotonic() - asked
    print(f"\ncancel: stopped {stopped:.2f} s after the request (API poll every 0.2 s included)")
    assert final["state"] == "cancelled", final["failure_reason"]
    assert stopped < 2.5, f"cancel took {stopped:.2f} s"
    assert len(final["rows"]) >= 1 and "rows kept, never published" in final["failure_reason"]
    requests_seen = len(ref.log())
    time.sleep(2)
    assert len(ref.log()) == requests_seen  # nothing more is sent
    assert len(submissions(live)) == before


def test_the_time_limit_ends_a_request_with_a_failure(live, ref):
    ensure_runner(live, "gpu-a")
    slow(ref, 1.0)
    request = queue(live, "gpu-a", time_limit_s=3)
    final = wait_for(live, request["id"], {"failed", "finished", "cancelled"}, timeout_s=30)
    assert final["state"] == "failed" and final["failure_reason"].startswith("time limit of 3 s reached after")
    assert final["submission"] is None


def test_a_worker_killed_mid_run_is_retried_once_then_worker_lost(live, ref):
    runner = ensure_runner(live, "gpu-a")
    slow(ref, 0.3)
    before = len(submissions(live))

    retried = queue(live, "gpu-a")
    wait_until(lambda: get(live, retried["id"])["rows"], what="a first row")
    runner.kill()
    runner = ensure_runner(live, "gpu-a")  # the new worker's heartbeat thread reaps the silent run
    final = wait_for(live, retried["id"], {"finished", "failed", "cancelled"}, timeout_s=120)
    assert final["state"] == "finished", final["failure_reason"]
    assert final["attempts"] == 2
    lost = [e for e in final["events"] if e["from_state"] == "running" and e["to_state"] == "queued"]
    assert len(lost) == 1 and "worker lost" in lost[0]["reason"] and "attempt 2 of 2" in lost[0]["reason"]
    assert len(submissions(live)) == before + 1  # exactly one, though the run started twice

    doomed = queue(live, "gpu-a")
    for attempt in (1, 2):
        wait_until(lambda: (lambda b: b["state"] == "running" and b["attempts"] == attempt and
                            any(r["attempt"] == attempt for r in b["rows"]))(get(live, doomed["id"])),
                   timeout_s=120, what=f"attempt {attempt} running")
        runner.kill()
        runner = ensure_runner(live, "gpu-a")
    final = wait_for(live, doomed["id"], {"failed", "finished", "cancelled"}, timeout_s=60)
    assert final["state"] == "failed"
    assert final["failure_reason"].startswith("worker lost (gpu-a@")
    assert final["failure_reason"].endswith("on attempt 2 of 2; not retried")
    assert final["submission"] is None and len(submissions(live)) == before + 1


def test_a_run_longer_than_the_visibility_timeout_runs_once(live, ref):
    """Every worker on a Redis broker restores unacknowledged messages older than
    its own visibility timeout (at start, then in periodic sweeps). Here both
    gpu-a workers run with a 3 s timeout, as a worker configured for short
    validations would, and the run is slow until the copy is refused: the
    second worker, starting mid-run, hands the message out again, and the
    claim refuses the copy."""
    for runner in list(live.runners.values()):
        if runner.host == "gpu-a":
            runner.stop()
    short = {"RUN_REQUEST_MAX_S": "2", "CELERY_VISIBILITY_TIMEOUT_S": "3"}
    first = start_runner(live, "gpu-a", "gpu-a-short-1", **short)
    with live.api(live.token) as api:
        wait_until(lambda: any(h["name"] == "gpu-a" and h["online"] and h["worker"].startswith("gpu-a-short-1@")
                               for h in api.get("/api/v1/runner-hosts/").json()), timeout_s=90, what="first worker")
    # Slow enough that the run outlasts the second worker's start on a loaded
    # machine (its restore happens when it starts polling), then sped up once
    # the copy has been refused, so the test does not wait out the slow script.
    slow(ref, 8.0)
    before = len(submissions(live))
    request = queue(live, "gpu-a")
    wait_until(lambda: get(live, request["id"])["state"] == "running", what="running")
    # A worker restores only messages older than its visibility timeout, and
    # after its start kombu sweeps again only every ~100 s (interval x throttle):
    # let the delivered message pass 3 s before the second worker starts.
    time.sleep(4)
    second = start_runner(live, "gpu-a", "gpu-a-short-2", **short)  # restores old unacked messages as it starts
    duplicate = wait_until(lambda: [e for e in get(live, request["id"])["events"] if "duplicate delivery" in e["reason"]],
                           timeout_s=80, what="the redelivered copy")
    ref.configure(responses=[{"tokens": 100}], ttft_s=0.005, itl_s=0.001)  # no reset: the log counts requests
    assert duplicate[0]["worker"].startswith("gpu-a-short-2@") and "already running on gpu-a-short-1@" in duplicate[0]["reason"]
    assert get(live, request["id"])["state"] == "running"  # the copy arrived while the first still ran
    final = wait_for(live, request["id"], {"finished", "failed", "cancelled"})
    assert final["state"] == "finished" and final["attempts"] == 1, final["events"]
    assert len(ref.log()) == 12  # one run's requests, not two
    assert len(submissions(live)) == before + 1
    first.stop()
    second.stop()


def test_an_endpoint_that_is_down_fails_with_its_rows_and_a_clear_reason(live):
    ensure_runner(live, "gpu-b")
    port = free_port()
    live.manage("runner_host", "allow-endpoint", "gpu-b", "down", "--url", f"http://127.0.0.1:{port}/v1", "--adapter",
                "openai-chat", "--model", MODEL, "--runtime", "llama.cpp", "--runtime-version", "b1")
    request = queue(live, "gpu-b", pack="smoke-chat", endpoint="down")
    final = wait_for(live, request["id"], {"failed", "finished"})
    assert final["state"] == "failed"
    assert final["failure_reason"].startswith("every execution failed (1 rows, none ok): cannot connect to "
                                              f"http://127.0.0.1:{port}/v1/chat/completions")
    assert final["rows"][0]["ok"] is False and final["submission"] is None


def test_a_worker_never_follows_a_redirect_nor_a_name_that_resolves_elsewhere(live, ref):
    ensure_runner(live, "gpu-b")
    ref.configure(responses=["Paris"], ttft_s=0.005, itl_s=0.001)
    ref.reset()
    redirector = redirect_server(ref.openai_url)  # to an address that *is* allowlisted elsewhere
    try:
        live.manage("runner_host", "allow-endpoint", "gpu-b", "redirector", "--url",
                    f"http://127.0.0.1:{redirector.server_address[1]}/v1", "--adapter", "openai-chat", "--model",
                    MODEL, "--runtime", "llama.cpp", "--runtime-version", "b1")
        live.manage("runner_host", "allow-endpoint", "gpu-b", "renamed", "--url",
                    ref.url.replace("127.0.0.1", "localhost") + "/v1", "--address", "127.0.0.2", "--adapter",
                    "openai-chat", "--model", MODEL, "--runtime", "llama.cpp", "--runtime-version", "b1")
        redirected = wait_for(live, queue(live, "gpu-b", pack="smoke-chat", endpoint="redirector")["id"],
                              {"failed", "finished"})
        renamed = wait_for(live, queue(live, "gpu-b", pack="smoke-chat", endpoint="renamed")["id"],
                           {"failed", "finished"})
    finally:
        redirector.shutdown()
    assert redirected["state"] == "failed" and "redirects are refused" in redirected["failure_reason"]
    assert redirector.hits == 1
    assert renamed["state"] == "failed" and "localhost resolves to 127.0.0.1" in renamed["failure_reason"]
    assert renamed["rows"] == []
    assert ref.log() == []  # neither request reached the real endpoint


def test_broker_down_when_a_request_is_created_queues_it_for_the_reaper(live):
    port = free_port()
    env = {**live.env, "CELERY_BROKER_URL": f"redis://127.0.0.1:{free_port()}/0"}
    web = subprocess.Popen(
        [sys.executable, "-m", "granian", "--interface", "wsgi", "--host", "127.0.0.1", "--port", str(port),
         "--workers", "1", "--workers-kill-timeout", "10", "registry_site.wsgi:application"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        wait_until(lambda: _answers(url), timeout_s=60, what="second web process")
        with live.api(live.token) as api:
            count = len(api.get("/api/v1/run-requests/").json())
        response = httpx.post(url + "/api/v1/run-requests/", headers={"Authorization": f"Bearer {live.token}"},
                              json={"host": "gpu-a", "endpoint": "ref", "model": MODEL, "pack": "smoke-chat"},
                              timeout=60)
        assert response.status_code == 201, response.text
        assert response.json()["state"] == "queued"
        with live.api(live.token) as api:
            assert len(api.get("/api/v1/run-requests/").json()) == count + 1
            # not this module's business to run it: cancelled before the reaper sends it
            assert api.post(f"/api/v1/run-requests/{response.json()['id']}/cancel/").status_code in (200, 202)
    finally:
        web.terminate()
        web.wait(timeout=20)


def _answers(url: str) -> bool:
    try:
        return httpx.get(url + "/", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False
