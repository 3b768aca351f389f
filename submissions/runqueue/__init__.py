"""Runs executed by Celery workers on registered runner hosts (the run queue).

An operator registers a runner host with an allowlist of endpoints and packs;
operators and the host's owner queue run requests; the worker on that host
(`-Q runs.<host>`) runs the pack with the core runner, bundles the result and
files it as a submission that goes through validation and review like any
upload. See docs/runner-hosts.md.
"""
