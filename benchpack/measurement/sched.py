"""Shorter scheduler turns for the thread that times a request (Linux EEVDF custom slices).

Why: on a machine doing other work, a reader woken by an arriving token
often finds every CPU busy. Since Linux 6.6 the fair scheduler (EEVDF) lets
a woken task preempt the running one only when its virtual deadline is
earlier, and the deadline is one *slice* after it becomes eligible (the
default slice is about 0.7 ms times 1 + log2(CPUs)). So the reader waits up
to a whole slice of someone else's turn before it can stamp the token
(docs/measurement.md, "Field conditions").
Since Linux 6.12 a task may ask for a shorter slice (`sched_setattr`,
`sched_runtime` for SCHED_OTHER, 0.1–100 ms), with no privilege needed: it
gets no larger share of the CPU, only its share in shorter turns, and with
them an earlier deadline, so it preempts a CPU-bound neighbour as soon as it
wakes. That is what a latency measurement needs, and only for the thread
and the time that it measures: `shortened()` sets it for the calling thread
and puts the previous value back.

The slice is per thread. A thread or process started inside the block
would inherit it (the kernel's rule); nothing the adapters run in their
timed window starts one. Elsewhere (other kernels, other systems, a
real-time policy already set, a seccomp filter) nothing changes and
`shortened()` is a no-op.

Blocks nest: inside a thread's `shortened()` block, a `shortened()` of the
same or a longer slice makes no system call and yields True (the turns are
already short). So a thread that times request after request (the runner's
single stream) asks once, around the whole sequence, and each request's
timed window costs nothing here: setting and restoring the slice per request
cost two `sched_setattr` calls (and one `sched_getattr`) each time, and a
restore can make the kernel reschedule the thread at once.
"""

from __future__ import annotations

import ctypes
import os
import struct
import sys
import threading
from contextlib import contextmanager
from typing import Iterator

SHORT_SLICE_NS = 100_000  # the kernel's minimum custom slice

_NUMBERS = {"x86_64": (314, 315), "aarch64": (274, 275), "arm64": (274, 275)}  # sched_setattr, sched_getattr
_ATTR = struct.Struct("=IIQiIQQQII")  # struct sched_attr, SCHED_ATTR_SIZE_VER1 (56 bytes)
_FAIR_POLICIES = (0, 3)  # SCHED_OTHER, SCHED_BATCH
_RESET_ON_FORK = 0x01


class _Syscalls:
    def __init__(self) -> None:
        self.setattr_nr = self.getattr_nr = None
        self.libc = None
        # os.uname() is what platform.machine() reads; `platform` itself is not needed on the run path.
        machine = os.uname().machine if hasattr(os, "uname") else ""
        if sys.platform.startswith("linux") and machine in _NUMBERS:
            try:
                self.libc = ctypes.CDLL(None, use_errno=True)
                self.libc.syscall.restype = ctypes.c_long
                self.setattr_nr, self.getattr_nr = _NUMBERS[machine]
            except OSError:
                self.libc = None

    def get(self) -> tuple | None:
        if self.libc is None:
            return None
        buf = ctypes.create_string_buffer(_ATTR.size)
        # syscall() is variadic: pass every integer as a C long explicitly.
        if self.libc.syscall(ctypes.c_long(self.getattr_nr), ctypes.c_long(0), buf, ctypes.c_long(_ATTR.size),
                             ctypes.c_long(0)) != 0:
            return None
        return _ATTR.unpack(buf.raw)

    def set(self, attr: tuple) -> bool:
        if self.libc is None:
            return False
        buf = ctypes.create_string_buffer(_ATTR.pack(*attr), _ATTR.size)
        return self.libc.syscall(ctypes.c_long(self.setattr_nr), ctypes.c_long(0), buf, ctypes.c_long(0)) == 0


_sys = _Syscalls()
# Per thread: the slice an enclosing `shortened()` block of this thread set, None outside any.
_held = threading.local()
# Set to False to measure without it (bench/measurement.py's ablation).
enabled = True


def current_slice_ns() -> int | None:
    """The calling thread's slice in ns (SCHED_OTHER/BATCH on Linux), None where it cannot be read."""
    attr = _sys.get()
    if attr is None or attr[1] not in _FAIR_POLICIES:
        return None
    return attr[5]


def _with_runtime(attr: tuple, runtime_ns: int) -> tuple:
    size, policy, flags, nice, priority, _, deadline, period, util_min, util_max = attr
    # Flags other than reset-on-fork would ask for changes (clamps, keep-*); pass none of them.
    return (_ATTR.size, policy, flags & _RESET_ON_FORK, nice, priority, runtime_ns, 0, 0, util_min, util_max)


@contextmanager
def shortened(slice_ns: int = SHORT_SLICE_NS) -> Iterator[bool]:
    """For the block, ask for `slice_ns` turns for the calling thread; yields whether the kernel took it.

    Inside an enclosing block of the same thread that already set a slice this short, nothing is asked
    (no system call) and it yields True; the enclosing block restores the slice when it ends.
    """
    held = getattr(_held, "slice_ns", None)
    if held is not None and held <= slice_ns:
        yield True
        return
    attr = _sys.get() if enabled else None
    if attr is None or attr[1] not in _FAIR_POLICIES or attr[5] <= slice_ns:
        yield False
        return
    changed = _sys.set(_with_runtime(attr, slice_ns))
    if changed:
        _held.slice_ns = slice_ns
    try:
        yield changed
    finally:
        if changed:
            _held.slice_ns = held
            _sys.set(_with_runtime(attr, attr[5]))
