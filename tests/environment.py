"""One rule for every test that needs something from its environment.

A test that needs a tool, a kernel feature, a permission, the real
llama-server or a browser says so through this module. Where that is
missing it is **skipped** on a developer's machine and **fails** under CI,
so CI can never go green by silently not running a check. `.ci/run`
installs what these tests need and fails when any test was skipped.

Under CI means the `CI` environment variable is set to anything but
"", "0" or "false" (GitHub Actions, GitLab and `.ci/run` set `CI=true`).
It replaces the former `BENCHPACK_REQUIRE_REAL_SERVER`, which decided the
same thing for the real-server tests alone.
"""

from __future__ import annotations

import functools
import os
from typing import Callable, NoReturn

import pytest


def under_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false")


def unavailable(reason: str) -> NoReturn:
    """Skip here, fail under CI — with the same reason either way."""
    if under_ci():
        pytest.fail(f"{reason} [required under CI: CI is set]", pytrace=False)
    pytest.skip(reason)


def needs(available: bool | Callable[[], bool], reason: str):
    """Decorator: run the test only where `available` (a bool or a callable, called at run time) holds;
    otherwise `unavailable(reason)`. Fixtures keep working (functools.wraps keeps the signature)."""

    def decorate(test):
        @functools.wraps(test)
        def wrapper(*args, **kwargs):
            if not (available() if callable(available) else available):
                unavailable(reason)
            return test(*args, **kwargs)

        return wrapper

    return decorate
