"""The llama_server fixture's behaviour when the server is not built: skip
locally (with the build hint), fail in CI. Runs an inner pytest session
against an empty cache so it never depends on what this machine has built."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]

INNER_TEST = '''
import pytest

@pytest.mark.real_server
def test_needs_server(llama_server):
    pass
'''


def run_inner_session(tmp_path: Path, require: bool) -> subprocess.CompletedProcess:
    (tmp_path / "conftest.py").write_text('pytest_plugins = ["tests.realserver"]\n')
    (tmp_path / "test_inner.py").write_text(INNER_TEST)
    # No plugin autoload: the inner session needs only our fixture, and
    # loading django/hypothesis/playwright plugins would dominate its runtime.
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT), PYTEST_DISABLE_PLUGIN_AUTOLOAD="1",
               BENCHPACK_CACHE=str(tmp_path / "empty-cache"))
    env.pop("CI", None)
    if require:
        env["CI"] = "true"
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-rs", "-p", "no:cacheprovider",
         "-o", "markers=real_server", str(tmp_path)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.slow
def test_it_skips_with_the_build_hint_when_the_server_is_not_built(tmp_path):
    result = run_inner_session(tmp_path, require=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 skipped" in result.stdout
    assert "scripts/llama-server.sh" in result.stdout


@pytest.mark.slow
def test_it_fails_instead_of_skipping_when_ci_requires_the_real_server(tmp_path):
    result = run_inner_session(tmp_path, require=True)
    assert result.returncode != 0
    assert "skipped" not in result.stdout
    assert "scripts/llama-server.sh" in result.stdout
    assert "required under CI: CI is set" in result.stdout
