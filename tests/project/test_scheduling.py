"""Longest work first (tests/scheduling.py): pytest-xdist hands out the unit with the most recorded seconds
left — a long test collected last starts first, a group stays whole — and every test still runs once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.scheduling import DEFAULT_S, base_id, load_durations

REPO = Path(__file__).resolve().parents[2]

INNER_CONFTEST = '''
from tests import scheduling
from tests.workers import LoadgroupIds


def pytest_configure(config):
    config.pluginmanager.register(LoadgroupIds(), "benchpack-loadgroup-ids")


def pytest_xdist_make_scheduler(config, log):
    return scheduling.make_scheduler(config, log, durations={
        "test_inner.py::test_long": 30.0,         # collected last
        "test_inner.py::test_grouped[0]": 5.0,    # the group: 5 s + 2 x the default
    })
'''

INNER_TEST = '''
import os

import pytest


def record(name):
    with open(os.environ["INNER_OUT"], "a") as f:
        f.write(name + "\\n")


@pytest.mark.parametrize("i", range(4))
def test_short(i):
    record(f"short-{i}")


@pytest.mark.xdist_group("together")
@pytest.mark.parametrize("i", range(3))
def test_grouped(i):
    record(f"grouped-{i}")


def test_long():
    record("long")
'''


def test_the_longest_unit_is_handed_out_first_and_every_test_runs_once(tmp_path):
    (tmp_path / "conftest.py").write_text(INNER_CONFTEST)
    (tmp_path / "test_inner.py").write_text(INNER_TEST)
    out = tmp_path / "order"
    # one worker, so the order it was given is the order the tests ran in; no plugin autoload (as
    # tests/project/test_parallel.py: the inner session needs only xdist)
    env = dict(os.environ, PYTHONPATH=str(REPO), INNER_OUT=str(out), PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
    env.pop("PYTEST_XDIST_WORKER", None)
    result = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "xdist", "-n", "1",
                             "--dist", "loadgroup", str(tmp_path)],
                            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    ran = out.read_text().split()
    assert ran == ["long", "grouped-0", "grouped-1", "grouped-2", "short-0", "short-1", "short-2", "short-3"]


def test_a_node_id_is_looked_up_without_its_group():
    assert base_id("tests/a.py::test_x[p@q]@tests.a") == "tests/a.py::test_x[p@q]"
    assert base_id("tests/a.py::test_x@demo") == "tests/a.py::test_x"
    assert base_id("tests/a.py::test_x[p@q]") == "tests/a.py::test_x[p@q]"


def test_the_recorded_durations_are_seconds_by_node_id(tmp_path):
    """tests/durations.json as bench/suite_time.py --record-durations writes it; a missing file is no
    durations (every unit DEFAULT_S a test: xdist's own order)."""
    recorded = load_durations()
    assert recorded and all("::" in test and "@" not in test.rsplit("]", 1)[-1] and seconds >= 1
                            for test, seconds in recorded.items())
    assert load_durations(tmp_path / "none.json") == {} and DEFAULT_S < 1
    (tmp_path / "d.json").write_text(json.dumps({"tests/a.py::test_x": 2.5}))
    assert load_durations(tmp_path / "d.json") == {"tests/a.py::test_x": 2.5}
