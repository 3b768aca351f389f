"""Pausing Python's cyclic garbage collector around hot sections."""

from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Iterator


@contextmanager
def gc_paused() -> Iterator[None]:
    """Disable the collector for the block and restore its previous state.

    Used where a collector pass would distort what is measured (a request on
    the wire) or only rescan objects that form no cycle (rows being imported).
    The collection that became due runs on the next allocation after the block.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
