"""A worker SIGKILLed in the middle of a validation: its heartbeat stops, the
reaper (beat, embedded in the next worker as in the demo) hands the submission
back within seconds, and it ends in the right state exactly once, published once."""

from __future__ import annotations

import os
import signal
import time

import pytest

from tests.service.live import start_live_service

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


@pytest.fixture
def live(tmp_path):
    service, stop = start_live_service(tmp_path / "live", redis_db=12)
    yield service
    stop()


def issue_token(live, email="kim@example.org") -> str:
    live.manage("make_operator", email, "--create", "--password", "kim-password-123")
    return live.manage("shell", "-c",
                       "from accounts.models import ApiToken; from django.contrib.auth import get_user_model;"
                       f"print(ApiToken.issue(get_user_model().objects.get(email='{email}'), 't')[1])").split()[-1]


def test_it_survives_a_worker_killed_mid_validation(live, bundle_archive):
    token = issue_token(live)
    live.stop_worker()
    live.start_worker({"BENCHPACK_TEST_VALIDATION_DELAY_S": "30"})
    archive = bundle_archive()
    with archive.open("rb") as fh, live.api(token) as client:
        submission = client.post("/api/v1/submissions/", files={"archive": (archive.name, fh)}).json()
    live.wait_for_state(token, submission["id"], {"validating"}, timeout_s=30)
    time.sleep(0.5)
    os.killpg(live.worker.pid, signal.SIGKILL)  # the whole worker, as the OOM killer or a power cut would
    live.worker.wait()
    killed_at = time.monotonic()

    live.start_worker(beat=True)  # a healthy worker with beat; nobody runs the reaper by hand
    final = live.wait_for_state(token, submission["id"], {"quarantined", "invalid", "failed"}, timeout_s=60)
    recovered_s = time.monotonic() - killed_at
    assert final["state"] == "quarantined"
    # heartbeat timeout 5 s + reaper every 2 s here (defaults 30 s / 10 s), far from the old 900 s
    assert recovered_s < 30, recovered_s
    print(f"\nrecovered {recovered_s:.1f} s after the kill")
    time.sleep(3)  # a redelivered copy of the message must change nothing
    final = live.wait_for_state(token, submission["id"], {"quarantined"})
    assert [e["to_state"] for e in final["events"]].count("quarantined") == 1

    live.manage("shell", "-c", f"from tests.service.vouch import approve; from django.contrib.auth import get_user_model;"
                f"print(approve('{submission['id']}', get_user_model().objects.get(email='kim@example.org')))")
    with live.api(token) as client:
        runs = client.get("/api/v1/runs/").json()["results"]
    assert len(runs) == 1
