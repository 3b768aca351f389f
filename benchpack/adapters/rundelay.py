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
"""

from __future__ import annotations

import os
import threading
from typing import Callable

_PATH = "/proc/thread-self/schedstat"
_local = threading.local()
MARGIN_S = 0.0005


def reader() -> Callable[[], int] | None:
    """A function giving the calling thread's run delay so far in ns (one pread of a file kept open per
    thread), or None where the system has no such statistic."""
    fd = getattr(_local, "fd", None)
    if fd is None:
        try:
            fd = os.open(_PATH, os.O_RDONLY)
            int(os.pread(fd, 128, 0).split()[1])
        except (OSError, ValueError, IndexError):
            fd = -1
        _local.fd = fd
    if fd < 0:
        return None
    pread = os.pread
    return lambda: int(pread(fd, 128, 0).split()[1])
