"""The demo's seeding queues every submission's runs at once (runs with lanes first) and still hands the
submissions to the registry in the plan's order (registry_site/demo_data.py `seed`; docs/testing.md,
"Stop 38: the demo's submissions seeded side by side"). The runs, bundles and uploads are stand-ins here:
what is checked is the order seeding starts and submits them in; test_e2e_demo.py runs the real thing."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest

from registry_site import demo_data
from registry_site.demo_data import DemoRun


@pytest.mark.django_db
def test_a_later_submissions_runs_start_before_an_earlier_one_is_submitted_and_submissions_keep_the_plan_order(
        monkeypatch, django_user_model):
    plan = [("first", [DemoRun("smoke-chat", model="a1"), DemoRun("smoke-chat", model="a2")]),
            ("second", [DemoRun("runtime-sweep", model="b1", lanes=("base", "depth"))])]
    events: list[tuple[str, str]] = []
    lock = threading.Lock()
    second_started = threading.Event()

    def run_one(run, ref, out):
        out.mkdir(parents=True)
        with lock:
            events.append(("run", run.model))
        if run.model == "b1":
            second_started.set()
        else:
            # The first submission's runs end only once the second's has started: seeding one submission
            # after another would wait here for ever (bounded, then the order below fails).
            second_started.wait(10)

    def submit_bundle(bundle, server_url, token, **kwargs):
        with lock:
            events.append(("submit", bundle.name))
        return SimpleNamespace(submission={"id": 0, "state": "rejected"})

    monkeypatch.setattr(demo_data, "demo_plan", lambda: plan)
    # Two seeding threads for three runs: which of the two first-taken runs appends its event first is the
    # threads' race (CI saw a1 before b1 with six threads), but the run left waiting for a free thread is
    # decided by the queue's order alone — it must be a submission-1 run, never b1.
    monkeypatch.setattr(demo_data, "SEED_PARALLEL_RUNS", 2)
    monkeypatch.setattr(demo_data, "_run_one", run_one)
    monkeypatch.setattr("benchpack.bundles.create.create_bundle", lambda outs, path, source: path)
    monkeypatch.setattr("benchpack.bundles.submit.submit_bundle", submit_bundle)
    operator = django_user_model.objects.create_user(username="op@example.org", email="op@example.org")
    said: list[str] = []

    assert demo_data.seed("http://127.0.0.1:9", operator, say=said.append) == 0  # every upload "rejected"

    runs = [e[1] for e in events if e[0] == "run"]
    # the run with lanes is taken first, though its submission is second: it is among the two started at once,
    # and a2, queued behind both, starts only after b1 (a1 waits for b1 to start before it ends)
    assert "b1" in runs[:2] and runs.index("b1") < runs.index("a2")
    assert [e for e in events if e[0] == "submit"] == [("submit", "bundle-1"), ("submit", "bundle-2")]
    assert events.index(("run", "b1")) < events.index(("submit", "bundle-1"))
    assert sorted(e[1] for e in events if e[0] == "run") == ["a1", "a2", "b1"]
    # Each submission's line is said once, when its first run starts.
    assert sorted(line for line in said if line.endswith("scripted runs") or line.endswith("scripted run")) == [
        "demo: first: 2 scripted runs", "demo: second: 1 scripted run"]
