"""When did unread bytes reach the machine, for a reader that comes to a TCP socket late (stop 40, h42d)?

A recvmsg() with SO_TIMESTAMPNS returns the stamp of the last receive buffer it copied from, so a read that
takes everything queued gets the NEWEST arrival. Reading (or peeking) only the first n bytes stops in the
buffer that holds byte n-1 and returns that buffer's stamp instead.

What a buffer's stamp means (Linux tcp_try_coalesce, measured on 6.18 in docs/measurement.md, "An exact
stamp for a late reader"): when a segment arrives while the previous one is still queued and unread, the
kernel may append it to that buffer and overwrite the buffer's stamp with the new segment's. A buffer's
stamp is therefore the arrival of the segment that carried its LAST byte, so it is exactly byte k's arrival
when byte k ends its buffer, and only an upper bound otherwise (data that came later was merged in behind
it). Merging needs the tail buffer to be unshared: on loopback the receiver's buffer is shared with the
sender's retransmit copy until the sender sees the ACK, so merging starts once the ACK is back; from a real
NIC buffers are unshared at once.

`first_unread_stamp(sock, through=k)` peeks k, k+1 and k bytes again (never blocks, consumes nothing): the stamp of
the buffer holding byte k-1 and whether it is exact (byte k-1 ends its buffer: the next byte is in another
buffer with another stamp, or there is no next byte yet). With k = the end of the first SSE event, an
exact stamp is that event's arrival; an inexact one says "no later than this" and the caller falls back.

The socket must have SO_TIMESTAMPNS on (`benchpack.adapters.rxstamp.enable`). Stamps are CLOCK_REALTIME
nanoseconds; `rxstamp.realtime_offset_ns()` puts them on the perf_counter scale.
"""

from __future__ import annotations

import socket
import struct
from typing import NamedTuple

# <asm-generic/socket.h> SO_TIMESTAMPNS_OLD == SCM_TIMESTAMPNS (the option benchpack.adapters.rxstamp turns on)
_SCM_TIMESTAMPNS = 35
_TIMESPEC = struct.Struct("@ll")
_ANCILLARY_BYTES = socket.CMSG_SPACE(_TIMESPEC.size) + socket.CMSG_SPACE(3 * _TIMESPEC.size) if hasattr(socket, "CMSG_SPACE") else 0
_PEEK = getattr(socket, "MSG_PEEK", 0) | getattr(socket, "MSG_DONTWAIT", 0)


class UnreadStamp(NamedTuple):
    stamp_ns: int  # CLOCK_REALTIME ns: when the segment carrying the last byte of the probed buffer arrived
    exact: bool    # the probed byte ends its buffer, so the stamp is that byte's own arrival


def _peek(sock: socket.socket, nbytes: int) -> tuple[int, int | None]:
    """Bytes peeked and the stamp of the last buffer they came from (None without one); never blocks."""
    try:
        data, ancillary, _, _ = sock.recvmsg(nbytes, _ANCILLARY_BYTES, _PEEK)
    except (BlockingIOError, InterruptedError):
        return 0, None
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == _SCM_TIMESTAMPNS and len(payload) >= _TIMESPEC.size:
            seconds, nanos = _TIMESPEC.unpack_from(payload)
            return len(data), seconds * 1_000_000_000 + nanos
    return len(data), None


def first_unread_stamp(sock: socket.socket, through: int = 1) -> UnreadStamp | None:
    """The receive stamp of unread byte `through - 1` and whether it is exact; None if fewer bytes are queued
    or the kernel gave no stamp. Peeks only: the data stays queued for the caller's normal read."""
    if through < 1 or not _ANCILLARY_BYTES:
        return None
    for _ in range(3):
        got, stamp = _peek(sock, through)
        if got < through or stamp is None:
            return None
        got_next, stamp_next = _peek(sock, through + 1)
        _, stamp_again = _peek(sock, through)
        # A merge only ever writes a newer stamp, so an unchanged stamp on byte through-1 means its buffer did not
        # grow between the peeks, and byte `through` then had the same stamp exactly when it shared the buffer.
        if stamp_again == stamp:
            return UnreadStamp(stamp, got_next <= through or stamp_next != stamp)
    return UnreadStamp(stamp_again if stamp_again is not None else stamp, False)  # still growing: a bound only
