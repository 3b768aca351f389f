"""Kernel receive timestamps: when a network read's bytes reached this machine, not when a thread got to them.

A chunk's arrival time was the clock reading taken as recv() returned. When
many streams share one Python process (the concurrency lane: a thread per
stream), bytes that arrived at the same instant are read one thread at a
time under the GIL, so the last stream's reading lags by the other
streams' work, and by a different amount on every token: that lag, not the
server, was the p99 stream's TPOT error in lockstep (docs/lanes.md). Linux
stamps every received packet when a socket asks for it (SO_TIMESTAMPNS)
and hands the stamp of the newest packet a read consumed to recvmsg() as
ancillary data; that time does not move with the reader's scheduling.

The stamp is wall-clock (CLOCK_REALTIME); the runner's clock is
perf_counter (CLOCK_MONOTONIC on Linux). `realtime_offset_ns()` takes the
difference of the two clocks once per request, from the closest of a few
back-to-back readings (sub-microsecond), and integer arithmetic keeps
nanoseconds exact. A stamp later than the user-space reading taken after
the read (a clock step between the two) is not believed: the reading is
used instead. Elsewhere (other systems, other architectures' option
numbers, a socket that refuses the option) reads are timed in user space as
before; `enable(sock)` says which.
"""

from __future__ import annotations

import platform
import socket
import struct
import sys
import time

# <asm-generic/socket.h>: SO_TIMESTAMPNS_OLD, the same number as SCM_TIMESTAMPNS. Python does not
# export it; the number differs on a few architectures (sparc, parisc, mips), which are left out.
_SO_TIMESTAMPNS = 35
_GENERIC_ARCHES = ("x86_64", "amd64", "i386", "i686", "aarch64", "arm64", "armv7l", "armv8l", "riscv64")
_TIMESPEC = struct.Struct("@ll")  # the _OLD layout: two native longs
ANCILLARY_BYTES = socket.CMSG_SPACE(_TIMESPEC.size) if hasattr(socket, "CMSG_SPACE") else 0
_NS = 1_000_000_000


def _supported() -> bool:
    return (sys.platform.startswith("linux") and platform.machine().lower() in _GENERIC_ARCHES
            and hasattr(socket.socket, "recvmsg")
            and time.get_clock_info("perf_counter").implementation == "clock_gettime(CLOCK_MONOTONIC)")


SUPPORTED = _supported()


def enable(sock: socket.socket) -> bool:
    """Ask the kernel to stamp what this TCP socket receives; False where that is not available."""
    if not SUPPORTED:
        return False
    try:
        sock.setsockopt(socket.SOL_SOCKET, _SO_TIMESTAMPNS, 1)
    except OSError:
        return False
    return True


def realtime_offset_ns() -> int:
    """CLOCK_REALTIME − CLOCK_MONOTONIC in ns, from the tightest of three bracketed readings."""
    best_width, best = None, 0
    for _ in range(3):
        before = time.perf_counter_ns()
        wall = time.time_ns()
        after = time.perf_counter_ns()
        if best_width is None or after - before < best_width:
            best_width, best = after - before, wall - (before + after) // 2
    return best


def arrival(ancillary: list, offset_ns: int, now: float) -> float:
    """The kernel's stamp in recvmsg's `ancillary` data on the perf_counter scale, or `now` without one."""
    for level, kind, payload in ancillary:
        if kind == _SO_TIMESTAMPNS and level == socket.SOL_SOCKET and len(payload) >= _TIMESPEC.size:
            seconds, nanos = _TIMESPEC.unpack_from(payload)
            stamp = (seconds * _NS + nanos - offset_ns) * 1e-9
            return stamp if stamp <= now else now
    return now


def arrival_clock(endpoint: str) -> str:
    """What a run's chunk arrival times are, for run-metadata.json: kernel stamps or clock readings."""
    if SUPPORTED and endpoint.startswith("http://"):
        return "kernel receive timestamp (SO_TIMESTAMPNS), on the perf_counter scale"
    return "perf_counter reading as each read returned"
