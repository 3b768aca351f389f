"""Shared pytest configuration. Fixture modules live next to this file and are
registered here so each stays small and owned by one concept."""

pytest_plugins = [
    "tests.realserver",  # llama_server: a real llama.cpp endpoint (scripts/llama-server.sh)
]
