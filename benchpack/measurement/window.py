"""The timed window: what the process must not do while a request is on the wire.

A clock reading taken when a token arrives is only as good as the moment
the reading thread gets to run. Inside `timed_window()`:

* the cyclic garbage collector is paused (a collection while a chunk waits
  to be read delays its timestamp by the length of the pass); the one that
  became due runs after the window, still inside the caller's CPU window;
* background work that registered with `background_work()` (the progress
  bar's redraw) waits: a redraw holds the GIL for a millisecond or more, and
  a token arriving meanwhile is stamped late;
* the calling thread asks the scheduler for short turns
  (`sched.shortened`), so a woken reader preempts a busy neighbour instead
  of waiting out its slice.

Several windows may be open at once (one per thread that times a request);
the collector is paused from the first opening to the last closing, and
background work runs only while none is open.
"""

from __future__ import annotations

import gc
import threading
from contextlib import contextmanager
from typing import Iterator

from benchpack.measurement import sched


class _State:
    def __init__(self) -> None:
        self.cond = threading.Condition(threading.Lock())
        self.open = 0
        self.background = 0
        self.gc_was_enabled = False


_state = _State()


@contextmanager
def timed_window() -> Iterator[None]:
    state = _state
    with state.cond:
        while state.background:  # a redraw in progress finishes before the request starts
            state.cond.wait()
        if state.open == 0:
            state.gc_was_enabled = gc.isenabled()
            gc.disable()
        state.open += 1
    try:
        with sched.shortened():
            yield
    finally:
        with state.cond:
            state.open -= 1
            if state.open == 0:
                if state.gc_was_enabled:
                    gc.enable()
                state.cond.notify_all()


@contextmanager
def background_work() -> Iterator[None]:
    """Run the block only while no timed window is open, and keep windows from opening meanwhile."""
    state = _state
    with state.cond:
        while state.open:
            state.cond.wait()
        state.background += 1
    try:
        yield
    finally:
        with state.cond:
            state.background -= 1
            if not state.background:
                state.cond.notify_all()


def window_open() -> bool:
    return _state.open > 0
