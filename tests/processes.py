"""Stopping a test's child process: SIGTERM, a grace period, then SIGKILL (never left running)."""

from __future__ import annotations

import subprocess


def stop(process: subprocess.Popen, grace_s: float) -> bool:
    """Whether `process` ended within `grace_s` of SIGTERM; killed otherwise. Already ended: True."""
    if process.poll() is not None:
        return True
    process.terminate()
    try:
        process.wait(timeout=grace_s)
        return True
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        return False
