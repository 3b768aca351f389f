"""tests/environment.py: one rule for every environment-dependent test — skipped here, failed under CI."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
INNER = '''
from tests.environment import needs, unavailable

@needs(False, "the widget tool is not installed")
def test_needs_a_missing_tool(tmp_path):
    assert tmp_path

def test_calls_unavailable():
    unavailable("no kernel feature")

@needs(lambda: True, "never missing")
def test_runs_where_available():
    assert True
'''


def inner_session(tmp_path: Path, ci: str | None) -> subprocess.CompletedProcess:
    (tmp_path / "test_inner.py").write_text(INNER)
    env = dict(os.environ, PYTHONPATH=str(REPO), PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
    env.pop("CI", None)
    if ci is not None:
        env["CI"] = ci
    return subprocess.run([sys.executable, "-m", "pytest", "-rs", "-p", "no:cacheprovider", str(tmp_path)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("ci", [None, "", "false", "0"])
def test_a_missing_requirement_skips_outside_ci(tmp_path, ci):
    result = inner_session(tmp_path, ci)
    assert result.returncode == 0, result.stdout
    assert "1 passed, 2 skipped" in result.stdout and "the widget tool is not installed" in result.stdout


@pytest.mark.parametrize("ci", ["true", "1"])
def test_a_missing_requirement_fails_under_ci_with_its_reason(tmp_path, ci):
    result = inner_session(tmp_path, ci)
    assert result.returncode == 1
    assert "2 failed, 1 passed" in result.stdout and "skipped" not in result.stdout
    assert "the widget tool is not installed [required under CI: CI is set]" in result.stdout


def test_no_test_skips_on_its_own():
    """Every environment-dependent skip goes through tests/environment.py (so CI fails instead)."""
    direct = re.compile(r"pytest\.skip\(|mark\.skipif\(|pytest\.importorskip\(|os\.environ\.get\(\"CI\"\)")
    offenders = [f"{path.relative_to(REPO)}:{n}" for path in sorted((REPO / "tests").rglob("*.py"))
                 if path.name not in ("environment.py", Path(__file__).name)
                 for n, line in enumerate(path.read_text().splitlines(), 1) if direct.search(line)]
    assert offenders == []
