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
    login = re.search(r"operator login: (\S+) / (\S+)", proc.stdout)
    assert login and login.group(1) == "operator@benchpack.local"

    db = sqlite3.connect(tmp_path / "var" / "registry.sqlite3")
    published = db.execute(
        "select r.pack_id, r.is_demo, s.state from registry_site_publishedrun r "
        "join submissions_submission s on s.id = r.submission_id order by r.pack_id"
    ).fetchall()
    assert published == [
        ("desktop-django-wrap", 1, "approved"),
        ("runtime-sweep", 1, "approved"),
        ("smoke-chat", 1, "approved"),
        ("tool-json", 1, "approved"),
    ]
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
