"""Bounded PostgreSQL connections (issue 30 item 7), against a real server and a role with
CONNECTION LIMIT 2: the pool keeps a burst of threads within the limit, and a database that refuses a
connection answers 503 with Retry-After, not 500.

Each case runs Django in a subprocess with its own DATABASE_URL (the role's own database), so the
settings — pool or not — are what production builds from the environment. Needs a PostgreSQL server
whose user may create roles: the suite's DATABASE_URL when it is PostgreSQL, else
BENCHPACK_TEST_POSTGRES_URL (default postgres://postgres@127.0.0.1:5432/postgres, CI's local server).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.environment import needs, unavailable

ROOT = Path(__file__).resolve().parents[2]
# The server to create the limited role on: the suite's PostgreSQL when it runs on one, else the local
# server CI starts before both of its runs (so the SQLite run tests this too).
BASE = os.environ.get("DATABASE_URL", "") if os.environ.get("DATABASE_URL", "").startswith("postgres") else \
    os.environ.get("BENCHPACK_TEST_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/postgres")
NEEDS = f"needs a PostgreSQL server whose user may create roles at {BASE} (DATABASE_URL or BENCHPACK_TEST_POSTGRES_URL)"


def _reachable() -> bool:
    import psycopg

    try:
        with psycopg.connect(BASE, connect_timeout=3) as conn:
            return bool(conn.execute("SELECT rolcreaterole OR rolsuper FROM pg_roles WHERE rolname = current_user")
                        .fetchone()[0])
    except psycopg.Error:
        return False


postgres = needs(_reachable, NEEDS)

# Eight threads, each taking a connection for 0.3 s: more than the role's limit of 2 at once.
BURST = """
import json, threading, django
django.setup()
from django.db import connection
errors, done = [], []
def work():
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_sleep(0.3)")
        done.append(1)
    except Exception as exc:
        errors.append(type(exc).__name__ + ": " + str(exc).splitlines()[0])
    finally:
        connection.close()  # a request's end: back to the pool (or closed)
threads = [threading.Thread(target=work) for _ in range(8)]
[t.start() for t in threads]; [t.join() for t in threads]
print(json.dumps({"done": len(done), "errors": errors}))
"""

REQUEST = """
import json, django
django.setup()
from django.test import Client
response = Client(raise_request_exception=False).get("/api/v1/runs/")
print(json.dumps({"status": response.status_code, "retry_after": response.get("Retry-After")}))
"""


@pytest.fixture
def limited():
    """A role allowed 2 connections and its own database; dropped afterwards."""
    if not _reachable():  # fixtures run before the test's own `needs` check
        unavailable(NEEDS)
    import psycopg

    name = f"bp_limited_{uuid.uuid4().hex[:8]}"
    parts = urlsplit(BASE)
    admin = parts._replace(path="/postgres").geturl()
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE ROLE "{name}" LOGIN CONNECTION LIMIT 2')
        conn.execute(f'CREATE DATABASE "{name}" OWNER "{name}"')
    host = parts.hostname + (f":{parts.port}" if parts.port else "")
    yield f"postgres://{name}@{host}/{name}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'DROP ROLE IF EXISTS "{name}"')


def _django(script: str, url: str, **env: str) -> dict:
    environ = {**os.environ, "DATABASE_URL": url, "DJANGO_SETTINGS_MODULE": "registry_site.settings_test",
               "DATABASE_POOL_TIMEOUT_S": "2", "DATABASE_POOL_IN_TESTS": "true", **env}
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=environ, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@postgres
def test_a_burst_of_threads_stays_within_the_pool(limited):
    pooled = _django(BURST, limited, DATABASE_POOL_MAX_SIZE="2")
    assert pooled == {"done": 8, "errors": []}  # they waited for a connection, none was refused
    # Without the pool (one connection per thread, as before) the same burst is refused by the server.
    unpooled = _django(BURST, limited, DATABASE_POOL="false")
    assert unpooled["errors"] and all("too many connections" in e for e in unpooled["errors"]), unpooled


@postgres
@pytest.mark.parametrize("pool", ["true", "false"], ids=["pool timeout", "server refusal"])
def test_a_refused_connection_answers_503_with_retry_after(limited, pool):
    import psycopg

    held = [psycopg.connect(limited) for _ in range(2)]  # the role's whole limit
    try:
        answer = _django(REQUEST, limited, DATABASE_POOL=pool, DATABASE_POOL_MIN_SIZE="0",
                         DATABASE_RETRY_AFTER_S="7")
    finally:
        for conn in held:
            conn.close()
    assert answer == {"status": 503, "retry_after": "7"}
