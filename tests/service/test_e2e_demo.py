"""The README's main job: `manage.py demo` brings up the whole registry and
publishes labelled demo data through the real pipeline."""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import sys

import pytest

from tests.service.live import ROOT, free_port

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def test_it_starts_the_registry_and_publishes_demo_data(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "CELERY_BROKER_URL", "DJANGO_SETTINGS_MODULE"}}
    env.update({"BENCHPACK_VAR_DIR": str(tmp_path / "var"), "BENCHPACK_ENV": "local"})
    proc = subprocess.run(
        [sys.executable, "manage.py", "demo", "--port", str(free_port()), "--exit-after-seed"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "demo data: 4 runs published" in proc.stdout
    # The local runner host's worker ran one request end to end and reproduced a seeded run.
    assert "demo run queue: 2 runs published through the local runner host" in proc.stdout
    assert re.search(r"demo: run #\d+ reproduced by run #\d+ \(independent\)", proc.stdout), proc.stdout[-3000:]
    boards = re.search(r"leaderboards: http://\S+/leaderboards/ \((\d+) boards over (\d+) packs", proc.stdout)
    assert boards and int(boards.group(2)) == 4, proc.stdout[-3000:]
    login = re.search(r"operator login: (\S+) / (\S+)", proc.stdout)
    assert login and login.group(1) == "operator@benchpack.local"

    db = sqlite3.connect(tmp_path / "var" / "registry.sqlite3")
    published = db.execute(
        "select r.pack_id, r.is_demo, s.state, r.provenance from registry_site_publishedrun r "
        "join submissions_submission s on s.id = r.submission_id order by r.pack_id, r.id"
    ).fetchall()
    # Earned provenance: the seeded uploads come from the demo submitter (self-reported, whatever their
    # bundles claim); the run request was queued by the operator on the operator's host; the reproduction
    # earned its value from the judge.
    assert published == [
        ("desktop-django-wrap", 1, "approved", "self-reported"),
        ("runtime-sweep", 1, "approved", "self-reported"),
        ("runtime-sweep", 1, "approved", "independently-reproduced"),  # the reproduction
        ("smoke-chat", 1, "approved", "self-reported"),
        ("smoke-chat", 1, "approved", "operator-curated"),  # the run request
        ("tool-json", 1, "approved", "self-reported"),
    ]
    # the demo fills a leaderboard per pack (whole pack) and per case, every row labelled demo
    entries = db.execute("select pack_id, is_demo, run_count from registry_site_leaderboardentry where "
                         "\"case\" = '' order by pack_id").fetchall()
    assert [(p, demo) for p, demo, _ in entries] == [(p, 1) for p in
                                                    ("desktop-django-wrap", "runtime-sweep", "smoke-chat", "tool-json")]
    assert int(boards.group(1)) == db.execute("select count(*) from (select distinct pack_id, \"case\" "
                                              "from registry_site_leaderboardentry)").fetchone()[0]
    requests = db.execute("select state, is_demo from submissions_runrequest").fetchall()
    assert requests == [("finished", 1), ("finished", 1)]
    events = db.execute("select from_state, to_state from submissions_runrequestevent e join submissions_runrequest r "
                        "on r.id = e.request_id where r.reproduction_of_id is null order by e.id").fetchall()
    assert events == [("", "queued"), ("queued", "running"), ("running", "finished")]
    assert db.execute("select verdict, independent from submissions_reproduction").fetchall() == [("reproduced", 1)]
    # the filesystem broker and temporary extraction leave no bundle files behind
    leftovers = [p for p in (tmp_path / "var").rglob("*") if p.suffix in {".gz", ".zip", ".jsonl"}]
    assert leftovers == []

    again = subprocess.run(
        [sys.executable, "manage.py", "demo", "--port", str(free_port()), "--exit-after-seed"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )
    assert again.returncode == 0, again.stderr[-3000:]
    assert "demo data already present" in again.stdout
    assert login.group(2) in again.stdout  # the same operator password is printed again
