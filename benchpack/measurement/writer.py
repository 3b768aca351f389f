"""Scripted writes to many sockets at their scheduled times, from one thread.

The reference server (benchpack.refserver.server) must keep many streams on their
own scripts at once (64 concurrent streams, each with its own TTFT and
token spacing) and record when each token really went out. One thread per
stream that sleeps and then busy-waits, as a single stream can afford, does
not scale: the spinning threads fight for the GIL, and a token is late by
whatever another thread's turn costs. So the handler threads only *plan*
their writes, and one writer thread makes them all:

* a heap holds each stream's next write; the writer sleeps until the
  earliest is due (a condition wait, ns resolution), and busy-waits the
  last SPIN_S only while a single stream is active (more streams would keep
  it spinning all the time on a small machine);
* each write is one non-blocking `send()`; `perf_counter()` is read just
  before it (the send time the log reports) and just after;
* the writer thread asks for short scheduler turns (`sched.shortened`), so
  on a busy machine it preempts a CPU-bound neighbour when a write is due;
* a write the socket cannot take at once (the client stopped reading)
  hands the rest of that stream back to its handler thread, which finishes
  it with blocking writes at the same scheduled times, so one stalled client
  never holds up the others.

A stream's writes go out in the order they were planned; `at=None` means
"right after the previous one".
"""

from __future__ import annotations

import heapq
import itertools
import socket
import threading
import time
from collections import deque
from typing import Callable

from benchpack.measurement import sched

perf_counter = time.perf_counter

SPIN_S = 0.0002
_DONTWAIT = getattr(socket, "MSG_DONTWAIT", 0)


def sleep_until(deadline: float) -> None:
    # time.sleep can overshoot by a scheduler tick; spin the last stretch.
    remaining = deadline - perf_counter()
    if remaining > SPIN_S * 2:
        time.sleep(remaining - SPIN_S)
    while perf_counter() < deadline:
        pass


class Write:
    __slots__ = ("at", "data", "done")

    def __init__(self, at: float | None, data: bytes, done: Callable[[float, float], None] | None) -> None:
        self.at = at
        self.data = data
        self.done = done  # called with (perf_counter before the send, after it)


class Stream:
    """The planned writes of one response on one socket."""

    def __init__(self, writer: TimedWriter, sock: socket.socket) -> None:
        self.writer = writer
        self.sock = sock
        self.pending: deque[Write] = deque()
        self.queued = False  # the writer owns its next write (in the heap, or being sent)
        self.handed_back = False  # the handler thread writes the rest itself
        self.error: BaseException | None = None
        self.idle = threading.Event()
        self.idle.set()
        self.last_at = 0.0

    def write(self, data: bytes, at: float | None = None, done: Callable[[float, float], None] | None = None) -> None:
        """Plan `data` for time `at` (None: right after the previous write of this stream)."""
        self.writer.plan(self, Write(at, data, done))

    def flush(self) -> None:
        """Block until every planned write went out; raises what a write raised (a client gone)."""
        self.idle.wait()
        with self.writer.cond:
            handed_back = self.handed_back
        if handed_back:
            self._write_rest_blocking()
        if self.error is not None:
            error, self.error = self.error, None
            raise error

    def _write_rest_blocking(self) -> None:
        with self.writer.cond:
            rest, self.pending = list(self.pending), deque()
            self.handed_back = False
        for item in rest:
            if item.at is not None:
                sleep_until(item.at)
            before = perf_counter()
            self.sock.sendall(item.data)  # raises for a client gone, as the handler expects
            if item.done is not None:
                item.done(before, perf_counter())


class TimedWriter:
    """The one thread that makes every planned write (see the module docstring)."""

    def __init__(self) -> None:
        self.cond = threading.Condition(threading.Lock())
        self._heap: list[tuple[float, int, Stream]] = []
        self._order = itertools.count()
        self._active: set[Stream] = set()
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="refserver-writer", daemon=True)
        self._thread.start()

    def stream(self, sock: socket.socket) -> Stream:
        return Stream(self, sock)

    def plan(self, stream: Stream, item: Write) -> None:
        with self.cond:
            if item.at is not None and item.at < stream.last_at:
                item.at = stream.last_at  # never before an earlier-planned write of the same stream
            if item.at is not None:
                stream.last_at = item.at
            stream.pending.append(item)
            stream.idle.clear()
            self._active.add(stream)
            if not stream.queued and not stream.handed_back:
                self._push(stream)
                self.cond.notify()

    def _push(self, stream: Stream) -> None:
        head = stream.pending[0]
        at = head.at if head.at is not None else perf_counter()
        stream.queued = True
        heapq.heappush(self._heap, (at, next(self._order), stream))

    def stop(self) -> None:
        with self.cond:
            self._stopping = True
            self.cond.notify()
        self._thread.join(5)

    def _next_due(self) -> tuple[float, Stream, bool] | None:
        with self.cond:
            while True:
                if self._stopping:
                    return None
                if not self._heap:
                    self.cond.wait()
                    continue
                at, _, stream = self._heap[0]
                spin = len(self._active) == 1
                wait = at - perf_counter() - (SPIN_S if spin else 0.0)
                if wait > 0:
                    self.cond.wait(wait)  # woken early when an earlier write is planned
                    continue
                heapq.heappop(self._heap)  # stays `queued` until _send is done with it
                return at, stream, spin

    def _run(self) -> None:
        with sched.shortened():  # the instrument wakes on time on a busy machine too (see sched)
            self._serve()

    def _serve(self) -> None:
        while (due := self._next_due()) is not None:
            at, stream, spin = due
            if spin:
                while perf_counter() < at:
                    pass
            try:
                self._send(stream)
            except Exception as exc:  # noqa: BLE001 - the writer serves every stream; one failure must not stop it
                with self.cond:
                    stream.error = exc
                    stream.pending.clear()
                    self._settle(stream)

    def _send(self, stream: Stream) -> None:
        with self.cond:
            item = stream.pending[0]
        before = perf_counter()
        try:
            sent = stream.sock.send(item.data, _DONTWAIT) if item.data else 0
        except BlockingIOError:
            sent = 0
        except OSError as exc:  # the client is gone: drop the rest of this stream
            with self.cond:
                stream.error = exc
                stream.pending.clear()
                self._settle(stream)
            return
        after = perf_counter()
        if sent < len(item.data):
            # The client is not reading: its handler thread finishes the stream
            # with blocking writes, and reports the send time of what is left.
            with self.cond:
                item.data = item.data[sent:]
                stream.handed_back = True
                self._settle(stream)
            return
        if item.done is not None:  # before the stream can read as idle: a flushed stream's log is complete
            item.done(before, after)
        with self.cond:
            stream.pending.popleft()
            if stream.pending:
                self._push(stream)
            else:
                self._settle(stream)

    def _settle(self, stream: Stream) -> None:
        stream.queued = False
        stream.idle.set()
        self._active.discard(stream)
