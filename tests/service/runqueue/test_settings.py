"""Run queue settings: the Redis visibility timeout must outlast the longest run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
PRINT = "import registry_site.settings as s; print(s.CELERY_VISIBILITY_TIMEOUT_S, s.CELERY_BROKER_TRANSPORT_OPTIONS)"


def _settings(**env):
    return subprocess.run([sys.executable, "-c", PRINT], capture_output=True, text=True, cwd=ROOT,
                          env={"PATH": "/usr/bin:/bin", "BENCHPACK_ENV": "test",
                               "CELERY_BROKER_URL": "redis://127.0.0.1:6379/0", **env})


def test_the_default_visibility_timeout_outlasts_the_longest_run():
    proc = _settings(RUN_REQUEST_MAX_S="7200")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split()[0] == "10800" and "'visibility_timeout': 10800" in proc.stdout


def test_a_visibility_timeout_shorter_than_a_run_stops_start_up_with_the_reason():
    proc = _settings(RUN_REQUEST_MAX_S="7200", CELERY_VISIBILITY_TIMEOUT_S="900")
    assert proc.returncode != 0
    assert ("CELERY_VISIBILITY_TIMEOUT_S=900 must exceed RUN_REQUEST_MAX_S=7200: "
            "Redis would redeliver a running benchmark to a second worker") in proc.stderr
