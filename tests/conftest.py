"""Shared pytest configuration. Fixture modules live next to this file and are
registered here so each stays small and owned by one concept."""

import functools

import pytest

from tests.environment import unavailable

pytest_plugins = [
    "tests.realserver",  # llama_server: a real llama.cpp endpoint (scripts/llama-server.sh)
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
