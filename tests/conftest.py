"""Shared pytest configuration. Fixture modules live next to this file and are
registered here so each stays small and owned by one concept."""

import functools
import json
import os
import resource
import sys
import time

import pytest
from hypothesis import settings as hypothesis_settings

from tests import scheduling, workers
from tests.environment import unavailable

# The property tests check what is drawn, never how fast: no per-example deadline (hypothesis' 200 ms
# default failed a chart test at load 27 on this shared 2-core machine, stop 43).
hypothesis_settings.register_profile("benchpack", deadline=None)
hypothesis_settings.load_profile("benchpack")

pytest_plugins = [
    "tests.realserver",  # llama_server: a real llama.cpp endpoint (scripts/llama-server.sh)
    "tests.service.demo",  # demo_service: one seeded `manage.py demo` per session
]


@functools.cache
def _bubblewrap_missing() -> str | None:
    from benchpack.repo_task.sandbox import probe_bubblewrap

    path, why = probe_bubblewrap()
    return None if path else f"needs bubblewrap ({why}); install it: apt-get install bubblewrap"


@pytest.fixture(autouse=True)
def _bubblewrap_or_unavailable(request):
    """`bubblewrap` tests need a working bwrap (Debian package `bubblewrap`): skipped here without it,
    failed under CI (tests/environment.py). Tests of the no-sandbox path (`no_sandbox`: `--unsandboxed`,
    a `sandbox="none"` parameter) in the same modules need no bwrap and always run."""
    node = request.node
    if node.get_closest_marker("bubblewrap") and not node.get_closest_marker("no_sandbox"):
        reason = _bubblewrap_missing()
        if reason:
            unavailable(reason)


def pytest_configure(config):
    if config.pluginmanager.has_plugin("xdist"):
        config.pluginmanager.register(workers.LoadgroupIds(), "benchpack-loadgroup-ids")


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """With BENCHPACK_TEST_ORDER=longest-first, `--dist loadgroup` hands out the longest units first
    (tests/scheduling.py). Opt-in: on a quiet machine the suite measured 17 min 11 s that way against
    15 min 11 s in xdist's own order (docs/testing.md, "Suite time")."""
    if config.getvalue("dist") == "loadgroup" and os.environ.get("BENCHPACK_TEST_ORDER") == "longest-first":
        return scheduling.make_scheduler(config, log)
    return None


def pytest_report_header(config):
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        # Not changed here (the environment is the user's), only said (docs/testing.md, "Measuring it").
        return ("PYTHONDONTWRITEBYTECODE is set: a module with no bytecode cache yet is compiled from source in every "
                "Python process of this run (a worker's start 16 s of CPU instead of 5 when none is cached; .ci/run "
                "compiles the caches first; docs/testing.md)")
    return None


def pytest_xdist_auto_num_workers(config):
    """`-n auto`: one worker more than the cores, at most three (Redis's 16 databases, five per worker:
    tests/workers.py). One more because much of the suite waits on other processes (live services, the demo's
    scripted sleeps, browsers, llama-server): on two cores two workers left them 20 % idle and the README's
    command took 898 s; three kept them 93 % busy and took 782 s (docs/testing.md, "Stop 38")."""
    return max(1, min(len(os.sched_getaffinity(0)) + 1, workers.MAX_WORKERS))


# Module-scoped fixtures that start servers, browsers or workers: every test that uses one goes to the
# same xdist worker, so the fixture starts once, as it did before the suite ran in parallel.
_GROUP_BY_MODULE_SCOPES = {"module", "package", "session"}


@pytest.hookimpl(tryfirst=True)  # before xdist reads the xdist_group marks (--dist loadgroup)
def pytest_collection_modifyitems(config, items):
    for item in items:
        # `exclusive`: a timing test that must not share the machine with another test of its kind; CI runs
        # them again in a pass of their own without parallel workers (.ci/run, docs/testing.md).
        if item.get_closest_marker("exclusive"):
            item.add_marker(pytest.mark.xdist_group("exclusive"))
            continue
        if item.get_closest_marker("xdist_group"):
            continue
        fixtureinfo = getattr(item, "_fixtureinfo", None)
        if fixtureinfo is None:
            continue
        for name in fixtureinfo.names_closure:
            defs = fixtureinfo.name2fixturedefs.get(name) or ()
            own = [d for d in defs if d.scope in _GROUP_BY_MODULE_SCOPES
                   and getattr(d.func, "__module__", "").startswith("tests.") and name != "llama_server"]  # one llama-server per worker is cheap; the tests using it are many
            if own:
                item.add_marker(pytest.mark.xdist_group(item.module.__name__))
                break


# `bench/suite_time.py` sets BENCHPACK_TEST_TIMELINE to a file: each worker appends one line per test (worker,
# node id, start, end, wall clock; the CPU seconds of the worker and of the children it reaped meanwhile — a
# live service's show at its module's last test, when it is stopped) and one at its session start, so the
# run's critical path can be rebuilt: which worker ran what, when, what waited and what computed. Nothing is
# written without it.
_TIMELINE = os.environ.get("BENCHPACK_TEST_TIMELINE")


def _timeline(**entry) -> None:
    with open(_TIMELINE, "a") as out:
        out.write(json.dumps({"worker": workers.worker_id(), **entry}) + "\n")


def pytest_sessionstart(session):
    if _TIMELINE:
        _timeline(event="sessionstart", at=time.time())


def pytest_sessionfinish(session):
    # The live services' migrated template (tests/service/live.py), if this process made one: its files and,
    # on PostgreSQL, its database go with the session.
    live = sys.modules.get("tests.service.live")
    if live is not None:
        live.drop_template()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    if not _TIMELINE:
        return (yield)
    started, cpu = time.time(), _cpu()
    try:
        return (yield)
    finally:
        _timeline(event="test", test=item.nodeid, start=started, end=time.time(), cpu=round(_cpu() - cpu, 2))


def _cpu() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime
