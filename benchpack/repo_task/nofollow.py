"""Host-side reads of files a candidate may have written, never through a symbolic link.

A candidate can leave a link where the runner reads (an output file, its
model-call log, a workspace file in the patch snapshot); following it would
read — and copy into results — any file the runner can read. `read_regular`
opens the last component with O_NOFOLLOW and O_NONBLOCK (a FIFO cannot hang
the runner) and reads only a regular file, checked on the open descriptor.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

FLAGS = os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)


class NotRegular(OSError):
    """The path is a link, a directory or a special file."""


def read_regular(path: str | Path, limit: int | None = None) -> bytes:
    """The bytes of the regular file at `path` (OSError/NotRegular otherwise; NotRegular too when
    it is larger than `limit`)."""
    try:
        fd = os.open(path, FLAGS)
    except OSError as exc:
        if os.path.islink(path):
            raise NotRegular(f"{path} is a symbolic link") from exc
        raise
    with os.fdopen(fd, "rb") as handle:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegular(f"{path} is not a regular file")
        if limit is not None and st.st_size > limit:
            raise NotRegular(f"{path} is larger than {limit} bytes")
        return handle.read() if limit is None else handle.read(limit + 1)[: limit + 1]
