"""How long the calling thread waited to run: its run delay, from the kernel's scheduler statistics.

Why: a read that takes several tokens at once carries one kernel stamp,
the newest packet's (the kernel coalesces segments waiting in a socket and
keeps the newest stamp), so the first token's own arrival is lost. The
TPOT span then starts at that read; `base.time_per_output_token` assumes
the tokens before it came at the stream's usual spacing — right when the
reader got to them late, wrong when the server sent them in a burst (a
busy server catching up: seen at 64 streams on a loaded 2-CPU machine,
where the reader was woken by the first token of a burst and sat a few
milliseconds in the run queue while the rest arrived).

The run delay tells the two apart. A thread blocked in recvmsg() is woken
by the first packet, waits `run_delay` for a CPU, then copies whatever
arrived meanwhile: so every token in that read arrived at most the run
delay before the read's stamp. `/proc/thread-self/schedstat`'s second
field is the thread's total time spent runnable but not running (ns);
reading it before and after the read gives the read's share. A thread
whose CPU is taken by the hypervisor (steal) is not counted as waiting
there, so the bound keeps a margin (`MARGIN_S`). Elsewhere (not Linux, no
scheduler statistics) `reader()` is None and nothing changes.

The file is read without letting go of the GIL (libc's pread through
ctypes.PyDLL, which keeps it; os.pread lets go). Reading it takes a
microsecond or two and never blocks, but each let-go is a hand-off when
other threads wait for the GIL: a worker makes two such reads per watched
read, six per request, and at 64 streams, whose workers wake together,
each let-go let one of the other 63 run first and put this thread back in
the GIL's queue (strace: several futex waits per read; issue 34 item 2).
"""

from __future__ import annotations

import ctypes
import os
import threading
from typing import Callable

_PATH = "/proc/thread-self/schedstat"
_local = threading.local()
MARGIN_S = 0.0005


_SIZE = 128


def _gil_pread() -> Callable[..., int] | None:
    """libc's pread(fd, buf, count, offset), called with the GIL held (ctypes.PyDLL), or None without it."""
    try:
        pread = ctypes.PyDLL(None, use_errno=True).pread
    except (OSError, AttributeError):
        return None
    pread.argtypes = (ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_long)
    pread.restype = ctypes.c_ssize_t
    return pread


_PREAD = _gil_pread()


def reader() -> Callable[[], int] | None:
    """A function giving the calling thread's run delay so far in ns (one pread of a file kept open per
    thread, the GIL kept meanwhile), or None where the system has no such statistic."""
    fd = getattr(_local, "fd", None)
    if fd is None:
        try:
            fd = os.open(_PATH, os.O_RDONLY)
            int(os.pread(fd, _SIZE, 0).split()[1])
        except (OSError, ValueError, IndexError):
            fd = -1
        _local.fd = fd
    if fd < 0:
        return None
    read = getattr(_local, "read", None)
    if read is None:
        read = _local.read = _reader(fd)
    return read


def _reader(fd: int) -> Callable[[], int]:
    if _PREAD is None:
        pread = os.pread
        return lambda: int(pread(fd, _SIZE, 0).split()[1])
    # This thread's own buffer (the reads of one thread never overlap), kept alive by the function that
    # writes into it: its address alone would not keep it.
    buf = ctypes.create_string_buffer(_SIZE)
    address = ctypes.addressof(buf)
    gil_pread, string_at = _PREAD, ctypes.string_at

    def run_delay(buf: ctypes.Array = buf) -> int:
        n = gil_pread(fd, address, _SIZE, 0)
        if n <= 0:
            raise OSError(ctypes.get_errno(), f"{_PATH}: pread gave {n}")
        return int(string_at(address, n).split()[1])

    return run_delay
