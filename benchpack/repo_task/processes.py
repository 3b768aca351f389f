"""Bounded subprocesses that leave nothing behind.

Every task/verifier subprocess runs in its own POSIX session (so its process
group is ours to signal), without a shell, with stdin closed. Output goes
straight to files: a grandchild that keeps a pipe open can then never hang the
runner, and enormous output costs disk, not memory.

On timeout the whole group gets SIGTERM, then, after a bounded grace period,
SIGKILL. Descendants are also snapshotted with psutil before signalling, so a
child that moved itself into a new process group (setsid) is still killed as
long as it had not already been orphaned. After a normal exit, leftovers in
the group are killed too: a task phase is over when its leader exits.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import psutil

TERMINATE_GRACE_S = 2.0


@dataclass(frozen=True)
class ProcessResult:
    returncode: int | None  # None when timed out
    timed_out: bool


def _descendants(pid: int) -> list[psutil.Process]:
    # psutil is imported where a tree is stopped, not at module import: the fenced-patch executor (which
    # imports this module) then runs from the standard library alone in an exported Harbor verifier
    # (docs/interop.md, answer mode); a timeout there still needs psutil, which that image installs.
    import psutil

    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return []


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _signal_all(processes: list[psutil.Process], sig: int) -> None:
    import psutil

    for process in processes:
        try:
            process.send_signal(sig)
        except psutil.Error:
            pass


def _alive(process: psutil.Process) -> bool:
    import psutil

    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def stop_process_tree(proc: subprocess.Popen, grace_s: float = TERMINATE_GRACE_S) -> None:
    """SIGTERM the group and known descendants, wait up to `grace_s`, then SIGKILL."""
    pgid = proc.pid  # start_new_session=True makes the child its group leader
    tree = _descendants(proc.pid)
    _signal_group(pgid, signal.SIGTERM)
    _signal_all(tree, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        proc.poll()
        alive = [p for p in tree if _alive(p)]
        # (killpg(pgid, 0) would also "see" unreaped zombies, so only the
        # known tree is polled; late joiners get the SIGKILL below.)
        if proc.returncode is not None and not alive:
            break
        time.sleep(0.02)
    _signal_group(pgid, signal.SIGKILL)
    _signal_all(tree + _descendants(proc.pid), signal.SIGKILL)
    proc.wait()
    # Orphans are reaped by init (or stay zombies where nothing reaps them:
    # harmless, they no longer run); wait only until none is still running.
    deadline = time.monotonic() + grace_s
    while any(_alive(p) for p in tree) and time.monotonic() < deadline:
        time.sleep(0.01)


def run_bounded(
    argv: list[str],
    *,
    cwd: Path,
    stdout_path: Path,
    stderr_path: Path,
    timeout_s: float | None,
    env: dict[str, str] | None = None,
    grace_s: float = TERMINATE_GRACE_S,
) -> ProcessResult:
    """Run `argv` to completion or timeout, with output written to the two files."""
    stdout_path.parent.mkdir(parents=True, exist_ok=True)
    stderr_path.parent.mkdir(parents=True, exist_ok=True)
    with open(stdout_path, "wb") as out, open(stderr_path, "wb") as err:
        proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            start_new_session=True,
            close_fds=True,
        )
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            stop_process_tree(proc, grace_s)
            return ProcessResult(returncode=None, timed_out=True)
        except BaseException:  # Ctrl-C: never leave the tree running
            stop_process_tree(proc, grace_s)
            raise
        # The leader is done; stragglers it left in its group go with it.
        _signal_group(proc.pid, signal.SIGKILL)
        return ProcessResult(returncode=proc.returncode, timed_out=False)


def run_captured(
    argv: list[str], *, cwd: Path, timeout_s: float | None, env: dict[str, str] | None = None, input_bytes: bytes = b""
) -> tuple[ProcessResult, bytes, bytes]:
    """Run a short tool (git apply) with small captured output and the same cleanup."""
    proc = subprocess.Popen(
        argv,
        cwd=cwd,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        stdout, stderr = proc.communicate(input=input_bytes, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        stop_process_tree(proc)
        proc.communicate()
        return ProcessResult(None, True), b"", b""
    except BaseException:
        stop_process_tree(proc)
        raise
    return ProcessResult(proc.returncode, False), stdout, stderr
