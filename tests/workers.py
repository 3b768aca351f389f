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
testing on the same machine; a second checkout may instead use a Redis of its own,
BENCHPACK_TEST_REDIS_PORT (`redis_url`). Hence at most three workers
(`pytest_xdist_auto_num_workers` in tests/conftest.py caps `-n auto`; an
explicit `-n 4` fails in the first test that asks for a Redis database).

`-n0` or `-p no:xdist` runs everything in one process, as before (debugging).
"""

from __future__ import annotations

import os

import pytest

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


class LoadgroupIds:
    """`--dist loadgroup` on pytest ≥ 9.2 with pytest-xdist 3.8: xdist tells the controller a test's group by
    appending "@<group>" to its node id (`item._nodeid`), which pytest 9.2 no longer reads (node ids are
    structured, `item._id`) — so every `xdist_group` is silently ignored
    (https://github.com/pytest-dev/pytest-xdist/issues/1386, fix pending in PR 1388). This does the same
    append on the structured id, after xdist's own hook, and only where xdist's did not take effect; with a
    fixed xdist it does nothing. tests/project/test_parallel.py checks that groups hold. (A parametrized
    test's id then reads `test_x[a]@group` where xdist's scheduler looks, and `test_x[a]@group]` in the JUnit
    report, which rebuilds it from the structured parts: cosmetic.)"""

    @staticmethod
    def group_names(item) -> list[str]:
        names = set()
        for mark in item.iter_markers("xdist_group"):
            names.add(str(mark.args[0] if mark.args else mark.kwargs.get("name", "default")))
        return sorted(names)

    @pytest.hookimpl(trylast=True)  # after xdist's own
    def pytest_collection_modifyitems(self, config, items):
        if not getattr(config.option, "loadgroup", False):
            return
        from _pytest.nodeid import NodeId

        for item in items:
            names = self.group_names(item)
            suffix = "@" + "_".join(names)
            if names and not item.nodeid.endswith(suffix):
                item._id = NodeId.parse(item.nodeid + suffix)


def redis_port() -> int:
    """The test Redis's port: 6379, or BENCHPACK_TEST_REDIS_PORT (a second checkout with a Redis of its own)."""
    return int(os.environ.get("BENCHPACK_TEST_REDIS_PORT", "6379"))


def redis_url(database: int) -> str:
    """URL of Redis database `database` (already this worker's number: `redis_db`) on the test Redis."""
    return f"redis://127.0.0.1:{redis_port()}/{database}"
