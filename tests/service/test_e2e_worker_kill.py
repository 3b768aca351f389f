"""A worker SIGKILLed in the middle of a validation: after restart the
submission ends in the right state exactly once, and is published once."""

from __future__ import annotations

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


def test_it_survives_a_worker_killed_mid_validation(live, bundle_archive):
    live.manage("make_operator", "kim@example.org", "--create", "--password", "kim-password-123")
    token = live.manage("shell", "-c",
                        "from accounts.models import ApiToken; from django.contrib.auth import get_user_model;"
                        "print(ApiToken.issue(get_user_model().objects.get(email='kim@example.org'), 't')[1])").split()[-1]
    live.stop_worker()
    live.start_worker({"BENCHPACK_TEST_VALIDATION_DELAY_S": "30"})
    archive = bundle_archive()
    with archive.open("rb") as fh, live.api(token) as client:
        submission = client.post("/api/v1/submissions/", files={"archive": (archive.name, fh)}).json()
    live.wait_for_state(token, submission["id"], {"validating"}, timeout_s=30)
    time.sleep(0.5)
    live.worker.send_signal(signal.SIGKILL)
    live.worker.wait()

    live.start_worker()  # a healthy worker; the reaper or redelivery finishes the job
    time.sleep(5)  # past SUBMISSION_VALIDATING_TIMEOUT_S
    live.manage("reap_validations")
    final = live.wait_for_state(token, submission["id"], {"quarantined", "invalid"}, timeout_s=60)
    assert final["state"] == "quarantined"
    # give a redelivered copy of the message time to run too: it must change nothing
    time.sleep(3)
    final = live.wait_for_state(token, submission["id"], {"quarantined"})
    assert [e["to_state"] for e in final["events"]].count("quarantined") == 1

    live.manage("shell", "-c", f"from submissions.review import approve; from django.contrib.auth import get_user_model;"
                f"print(approve('{submission['id']}', get_user_model().objects.get(email='kim@example.org')))")
    with live.api(token) as client:
        runs = client.get("/api/v1/runs/").json()
    assert len(runs) == 1
