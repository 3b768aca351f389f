"""Shared pytest configuration. Fixture modules live next to this file and are
registered here so each stays small and owned by one concept."""

pytest_plugins = [
    "tests.realserver",  # llama_server: a real llama.cpp endpoint (scripts/llama-server.sh)
]


def pytest_collection_modifyitems(config, items):
    """`bubblewrap` tests need a working bwrap (Debian package `bubblewrap`). Locally
    they skip without it; in CI (`CI` set, .ci/run installs it) they run and fail."""
    import os

    import pytest

    marked = [item for item in items if item.get_closest_marker("bubblewrap")]
    if not marked or os.environ.get("CI"):
        return
    from benchpack.repo_task.sandbox import probe_bubblewrap

    path, why = probe_bubblewrap()
    if path is None:
        skip = pytest.mark.skip(reason=f"needs bubblewrap ({why}); install it: apt-get install bubblewrap")
        for item in marked:
            item.add_marker(skip)
