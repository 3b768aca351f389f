"""PostgreSQL's JIT compiler is off for the registry's connections unless DATABASE_JIT=true
(registry_site/settings.py; at 10M case rows one timeline read spent 1.0 s compiling, docs/leaderboards.md).

Django runs in a subprocess with the environment production builds its settings from, against a real
server: the suite's DATABASE_URL when it is PostgreSQL, else BENCHPACK_TEST_POSTGRES_URL (CI's local server).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import psycopg

from tests.environment import needs

ROOT = Path(__file__).resolve().parents[2]
BASE = os.environ.get("DATABASE_URL", "") if os.environ.get("DATABASE_URL", "").startswith("postgres") else \
    os.environ.get("BENCHPACK_TEST_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/postgres")

SHOW_JIT = """
import django
django.setup()
from django.db import connection
with connection.cursor() as cursor:
    cursor.execute("SHOW jit")
    print(cursor.fetchone()[0])
"""


def _reachable() -> bool:
    try:
        with psycopg.connect(BASE, connect_timeout=3):
            return True
    except psycopg.Error:
        return False


postgres = needs(_reachable, f"needs a PostgreSQL server at {BASE} (DATABASE_URL or BENCHPACK_TEST_POSTGRES_URL)")


def _jit_seen_by_django(**env) -> str:
    environment = {key: value for key, value in os.environ.items() if key != "DATABASE_JIT"}
    environment.update(DJANGO_SETTINGS_MODULE="registry_site.settings", DATABASE_URL=BASE, **env)
    done = subprocess.run([sys.executable, "-c", SHOW_JIT], cwd=ROOT, env=environment, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip().splitlines()[-1]


@postgres
def test_the_registry_turns_jit_off_by_default():
    assert _jit_seen_by_django() == "off"


@postgres
def test_database_jit_true_leaves_the_servers_own_setting():
    with psycopg.connect(BASE, connect_timeout=3) as conn:
        server_setting = conn.execute("SHOW jit").fetchone()[0]
    assert _jit_seen_by_django(DATABASE_JIT="true") == server_setting
