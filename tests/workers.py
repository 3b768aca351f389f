"""What each pytest-xdist worker owns, so that the suite can run on every core.

`uv run pytest` runs with `-n auto --dist loadgroup` (pyproject.toml). Each
worker is its own process with its own temporary directory (tmp_path), its
own SQLite test file (registry_site/settings_test.py names it by process id)
and its own PostgreSQL test database (pytest-django suffixes it with the
worker id: `test_<name>_gw0`). Ports are free ports (`tests.service.live.
free_port`, `tests.realserver`), never fixed numbers. What is left to share is
Redis, which has 16 numbered databases and no names: the live tests use the
logical databases 10–14, and worker N uses those numbers minus 5·N (gw0: 10–14,
gw1: 5–9, gw2: 0–4), plus BENCHPACK_TEST_REDIS_DB_OFFSET for a second checkout
testing on the same machine. Hence at most three workers
(`pytest_xdist_auto_num_workers` in tests/conftest.py caps `-n auto`; an
explicit `-n 4` fails in the first test that asks for a Redis database).

`-n0` or `-p no:xdist` runs everything in one process, as before (debugging).
"""

from __future__ import annotations

import os

REDIS_DATABASES = 16
REDIS_DATABASES_PER_WORKER = 5  # the live tests' logical databases 10–14
MAX_WORKERS = REDIS_DATABASES // REDIS_DATABASES_PER_WORKER


def worker_id() -> str:
    """"gw0", "gw1", … in an xdist worker; "master" without xdist (or with -n0)."""
    return os.environ.get("PYTEST_XDIST_WORKER", "master")


def worker_index() -> int:
    wid = worker_id()
    return int(wid[2:]) if wid.startswith("gw") else 0


def redis_db(logical: int) -> int:
    """This worker's Redis database number for a test's logical database (10–14)."""
    index = worker_index()
    if index >= MAX_WORKERS:
        raise RuntimeError(f"xdist worker {worker_id()}: Redis has {REDIS_DATABASES} databases and each worker uses "
                           f"{REDIS_DATABASES_PER_WORKER}; run with at most -n {MAX_WORKERS} (tests/workers.py)")
    offset = int(os.environ.get("BENCHPACK_TEST_REDIS_DB_OFFSET", "0"))
    return (logical - REDIS_DATABASES_PER_WORKER * index + offset) % REDIS_DATABASES
