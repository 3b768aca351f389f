"""The parallel run's own rules (tests/workers.py): each xdist worker gets Redis databases of its own, and a
group of tests (`xdist_group`: a module's costly fixture, the demo, the `exclusive` timing tests) really runs
on one worker — pytest-xdist 3.8 on pytest 9.2 ignores groups without a word, which this would catch."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import workers

REPO = Path(__file__).resolve().parents[2]

INNER_CONFTEST = '''
from tests.workers import LoadgroupIds


def pytest_configure(config):
    config.pluginmanager.register(LoadgroupIds(), "benchpack-loadgroup-ids")
'''

INNER_TEST = '''
import os

import pytest

OUT = os.environ["INNER_OUT"]


def record(name):
    with open(os.path.join(OUT, name), "w") as f:
        f.write(os.environ["PYTEST_XDIST_WORKER"])


@pytest.mark.xdist_group("together")
@pytest.mark.parametrize("i", range(6))
def test_grouped(i):
    record(f"grouped-{i}")


@pytest.mark.parametrize("i", range(6))
def test_free(i):
    record(f"free-{i}")
'''


def test_a_group_runs_on_one_worker(tmp_path):
    (tmp_path / "conftest.py").write_text(INNER_CONFTEST)
    (tmp_path / "test_inner.py").write_text(INNER_TEST)
    out = tmp_path / "out"
    out.mkdir()
    # no plugin autoload: the inner session needs only xdist (django, playwright, … would dominate its time)
    env = dict(os.environ, PYTHONPATH=str(REPO), INNER_OUT=str(out), PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
    env.pop("PYTEST_XDIST_WORKER", None)
    result = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "xdist", "-n", "2",
                             "--dist", "loadgroup", "-v", str(tmp_path)],
                            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    grouped = {(out / f"grouped-{i}").read_text() for i in range(6)}
    assert len(grouped) == 1, result.stdout[-3000:]
    assert len(list(out.iterdir())) == 12


@pytest.mark.parametrize("worker, first", [("master", 10), ("gw0", 10), ("gw1", 5), ("gw2", 0)])
def test_each_worker_has_redis_databases_of_its_own(monkeypatch, worker, first):
    monkeypatch.setenv("PYTEST_XDIST_WORKER", worker)
    monkeypatch.delenv("BENCHPACK_TEST_REDIS_DB_OFFSET", raising=False)
    assert [workers.redis_db(n) for n in range(10, 15)] == list(range(first, first + 5))


def test_an_offset_moves_them_and_a_fourth_worker_is_refused(monkeypatch):
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw1")
    monkeypatch.setenv("BENCHPACK_TEST_REDIS_DB_OFFSET", "1")
    assert workers.redis_db(10) == 6
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw3")
    with pytest.raises(RuntimeError, match="at most -n 3"):
        workers.redis_db(10)


@pytest.mark.parametrize("cores, expected", [(1, 2), (2, 3), (8, workers.MAX_WORKERS)])
def test_auto_starts_one_worker_more_than_the_cores_at_most_three(monkeypatch, cores, expected):
    from tests import conftest

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(cores)))
    assert conftest.pytest_xdist_auto_num_workers(None) == expected
