"""Schemathesis against the live service (granian, the real settings module), from the schema the service
serves at /api/v1/schema/: every operation, every check, as an anonymous visitor and as a token holder
(issue 22 §4). The pass condition is 0 failures: no server error, no response outside the schema, no
input the schema forbids accepted and none it allows refused.

Bounded: a fixed seed, --max-examples per pass, one worker (the machine is shared), and one pass of each
phase unless a time box is asked for.

One pass (the default, the README's `uv run pytest`): the coverage phase, then one fuzzing pass
(--max-examples per operation) and one stateful pass — the same ~2,400 cases every run, 16-70 s, so a
failure found is found again by the next run. A time box (`BENCHPACK_SCHEMATHESIS_MAX_TIME=<seconds>`,
which `.ci/run` sets to 150): under --max-time Schemathesis runs the coverage phase once and then repeats
the fuzzing and stateful phases, new cases each pass, until the budget is spent — a deeper random search
that takes the box whatever a request costs, so it belongs to CI, not to every developer's run
(docs/testing.md, "Schemathesis"). The service runs as deployed (deploy/benchpack.env.example): persistent
database connections and the throttle counters in Redis. With the demo's defaults (a new SQLite connection
per request, a throttle counter written to the database cache on every request, the WAL checkpointed as
each connection closed) the coverage phase took 1.4 to 3 times as long (load 3 to 10): time the repeated
phases now get."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.service.live import ROOT, start_live_service
from tests.workers import redis_db, redis_url

HERE = Path(__file__).parent

pytestmark = [pytest.mark.slow, pytest.mark.e2e]

MAX_EXAMPLES = 12
BROKER_DB = 13  # start_live_service's own Redis database (this worker's number of it), flushed at its start
SETUP = """
from accounts.models import ApiToken
from allauth.account.models import EmailAddress
from django.contrib.auth import get_user_model
user = get_user_model().objects.create_user(username="st@example.org", email="st@example.org", password="st-password-123")
EmailAddress.objects.create(user=user, email=user.email, verified=True, primary=True)
print("TOKEN", ApiToken.issue(user, "schemathesis")[1])
from submissions.runqueue import tokens
from submissions.runqueue.hosts import approve_hardware
from submissions.runqueue.models import RunnerHost
host = RunnerHost.objects.create(name="st-host", owner=user)
approve_hardware(host, "st-cpu+no-gpu+16gb")
print("HOST_TOKEN", tokens.issue(host))
"""




def time_box_s() -> int | None:
    """BENCHPACK_SCHEMATHESIS_MAX_TIME: the seconds of each run's time box, or None (unset or empty) for one
    pass of each phase. Anything but a positive whole number fails every run here, naming the variable."""
    value = os.environ.get("BENCHPACK_SCHEMATHESIS_MAX_TIME", "").strip()
    if not value:
        return None
    if not value.isdigit() or int(value) == 0:
        raise ValueError(f"BENCHPACK_SCHEMATHESIS_MAX_TIME={value!r}: expected a positive whole number of "
                         f"seconds, or unset for one pass of each phase")
    return int(value)


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    # Throttling is tested elsewhere (test_throttles_redis.py); here a 429 would only hide operations.
    # The cache shares the broker's database: its keys are prefixed (":1:…"), and nothing consumes the queue.
    service, stop = start_live_service(tmp_path_factory.mktemp("schemathesis"), redis_db=BROKER_DB, worker=False,
                                       env_overrides={"API_ANON_RATE": "100000/minute",
                                                      "API_USER_RATE": "100000/minute",
                                                      "DATABASE_CONN_MAX_AGE": "60",
                                                      "CACHE_URL": redis_url(redis_db(BROKER_DB))})
    service.manage("seed_catalogue", "--cases", "60", "--systems", "4", "--rows-per-case", "1")
    made = service.manage("shell", "-c", SETUP)
    service.token = re.search(r"^TOKEN (\S+)", made, re.M).group(1)
    service.host_token = re.search(r"^HOST_TOKEN (\S+)", made, re.M).group(1)
    yield service
    stop()


def _schemathesis(live, tmp_path, *headers: str, only: str | None = None, schema: str | None = None) -> dict:
    report = tmp_path / "report.json"
    command = [sys.executable, "-m", "schemathesis.cli", "--config-file", str(HERE / "schemathesis.toml"), "run", schema or f"{live.url}/api/v1/schema/", "--url", live.url,
               "--checks", "all", "--max-examples", str(MAX_EXAMPLES), "--seed", "22", "--workers", "1",
               "--no-shrink", "--generation-database", "none", "--request-timeout", "30",
               "--report", "json", "--report-json-path", str(report), "--no-color"]
    box = time_box_s()
    if box is not None:
        command += ["--max-time", str(box)]
    for header in headers:
        command += ["-H", header]
    if only:
        command += ["--include-path-regex", only]
    # cwd: Schemathesis keeps a crash cache (.schemathesis/) in its working directory, not in the checkout.
    env = {**os.environ, "SCHEMATHESIS_HOOKS": "tests.service.api.schemathesis_hooks",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    run = subprocess.run(command, capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    return {"code": run.returncode, "output": run.stdout[-20000:] + run.stderr[-4000:]}


@pytest.mark.parametrize("who", ["anonymous", "token"])
def test_the_api_matches_its_schema(live, tmp_path, who):
    headers = [f"Authorization: Bearer {live.token}"] if who == "token" else []
    result = _schemathesis(live, tmp_path, *headers)
    assert result["code"] == 0, result["output"]
    assert "No issues found" in result["output"] or "passed" in result["output"], result["output"]


def test_the_runner_host_api_matches_its_schema(live, tmp_path):
    """/api/runner/v1/ with a host token (issue 30): every operation, every check, 0 failures; a request
    about a run request that is not this host's is a 403 like any unknown one."""
    import httpx

    # The schema is the public one (loaded anonymously: a host token is no login of the schema view).
    schema = tmp_path / "schema.json"
    schema.write_bytes(httpx.get(f"{live.url}/api/v1/schema/?format=json", timeout=60).raise_for_status().content)
    result = _schemathesis(live, tmp_path, f"Authorization: Bearer {live.host_token}", only="^/api/runner/v1/",
                           schema=str(schema))
    assert result["code"] == 0, result["output"]
    assert "No issues found" in result["output"] or "passed" in result["output"], result["output"]


@pytest.mark.parametrize("value, box", [("", None), ("150", 150), (" 60 ", 60)])
def test_the_time_box_is_read_from_the_environment(monkeypatch, value, box):
    monkeypatch.setenv("BENCHPACK_SCHEMATHESIS_MAX_TIME", value)
    assert time_box_s() == box


@pytest.mark.parametrize("value", ["0", "-5", "1.5", "nan", "150s"])
def test_a_time_box_that_is_not_a_positive_whole_number_is_refused_by_name(monkeypatch, value):
    monkeypatch.setenv("BENCHPACK_SCHEMATHESIS_MAX_TIME", value)
    with pytest.raises(ValueError, match="BENCHPACK_SCHEMATHESIS_MAX_TIME=.*positive whole number"):
        time_box_s()
