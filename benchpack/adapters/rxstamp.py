"""Kernel timestamps: when a network read's bytes reached this machine, and when a request's last byte left it.

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

The send side, `enable_tx(sock)` and `sent_at(...)`: a request's clock
started with a reading taken before the request was built and sent. With
16 or 64 streams in one process, the thread that took it then waited for
the GIL while the other streams built and sent theirs, so its TTFT carried
milliseconds that the server never saw (docs/measurement.md). Linux also
stamps transmitted packets when a socket asks (SO_TIMESTAMPING with
SOF_TIMESTAMPING_TX_SOFTWARE: the driver's stamp as the packet is handed
to the device; on loopback that is inside the send() call) and queues the
stamp on the socket's error queue, where `sent_at` reads it
(MSG_ERRQUEUE, never blocking). TCP stamps the last byte of each send()
call, so the newest stamp is when the request's last byte left. Same
clock (CLOCK_REALTIME) and the same offset as the receive stamps. Where
there is no stamp (not supported, or a device that stamps later than the
send returns), the caller uses the clock reading taken as sendall()
returned: when the last byte was handed to the kernel.
"""

from __future__ import annotations

import os
import socket
import struct
import sys
import time

# <asm-generic/socket.h>: SO_TIMESTAMPNS_OLD, the same number as SCM_TIMESTAMPNS. Python does not
# export it; the number differs on a few architectures (sparc, parisc, mips), which are left out.
_SO_TIMESTAMPNS = 35
_GENERIC_ARCHES = ("x86_64", "amd64", "i386", "i686", "aarch64", "arm64", "armv7l", "armv8l", "riscv64")
_TIMESPEC = struct.Struct("@ll")  # the _OLD layout: two native longs
# SO_TIMESTAMPING_OLD (== SCM_TIMESTAMPING): its message carries three timespecs, the software stamp first.
_SO_TIMESTAMPING = 37
_SOF_TX_SOFTWARE = 1 << 1
_SOF_SOFTWARE = 1 << 4     # report software stamps
_SOF_OPT_TSONLY = 1 << 11  # the error queue carries the stamp only, not a copy of the packet
_TX_FLAGS = _SOF_TX_SOFTWARE | _SOF_SOFTWARE | _SOF_OPT_TSONLY
# With SO_TIMESTAMPING on, a read may carry an SCM_TIMESTAMPING message after the SCM_TIMESTAMPNS one:
# room for both, so neither is cut off (MSG_CTRUNC).
ANCILLARY_BYTES = (socket.CMSG_SPACE(_TIMESPEC.size) + socket.CMSG_SPACE(3 * _TIMESPEC.size)
                   if hasattr(socket, "CMSG_SPACE") else 0)
_ERRQUEUE_BYTES = 512  # one stamp plus the sock_extended_err that comes with it
_ERRQUEUE_FLAGS = getattr(socket, "MSG_ERRQUEUE", 0) | getattr(socket, "MSG_DONTWAIT", 0)
_NS = 1_000_000_000


def _supported() -> bool:
    return (sys.platform.startswith("linux") and os.uname().machine.lower() in _GENERIC_ARCHES  # what platform.machine() reads
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


def enable_tx(sock: socket.socket) -> bool:
    """Ask the kernel to stamp the last byte of every send() on this TCP socket; False where not available."""
    if not SUPPORTED or not hasattr(socket, "MSG_ERRQUEUE"):
        return False
    try:
        sock.setsockopt(socket.SOL_SOCKET, _SO_TIMESTAMPING, _TX_FLAGS)
    except OSError:
        return False
    return True


def drain_tx(sock: socket.socket, limit: int = 64) -> int | None:
    """Empty the socket's error queue; the newest transmit stamp in it (CLOCK_REALTIME ns), or None.

    Never blocks. Called after every send, so stamps cannot pile up: a
    non-empty error queue also makes the socket look readable to select().
    """
    newest = None
    for _ in range(limit):
        try:
            _, ancillary, _, _ = sock.recvmsg(1, _ERRQUEUE_BYTES, _ERRQUEUE_FLAGS)
        except OSError:  # BlockingIOError: the queue is empty
            break
        for level, kind, payload in ancillary:
            if kind == _SO_TIMESTAMPING and level == socket.SOL_SOCKET and len(payload) >= _TIMESPEC.size:
                seconds, nanos = _TIMESPEC.unpack_from(payload)  # the software stamp
                stamp = seconds * _NS + nanos
                if stamp and (newest is None or stamp > newest):
                    newest = stamp
    return newest


def sent_at(sock: socket.socket, offset_ns: int, before: float, now: float) -> float:
    """When the last byte of what was just sent left, on the perf_counter scale: the kernel's transmit stamp
    when there is one between `before` (a reading taken before the send) and `now` (taken as it returned),
    else `now`."""
    newest = drain_tx(sock)
    if newest is None:
        return now
    stamp = (newest - offset_ns) * 1e-9
    # Older than `before` (by more than the offset's rounding) is a stamp left from an earlier send.
    return max(stamp, before) if before - 1e-3 <= stamp <= now else now


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
