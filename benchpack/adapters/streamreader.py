"""One reading thread for many streams: a level's response bodies read from one epoll loop.

Why: the concurrency and rate lanes run every request in its own worker
thread, and that thread used to wait in its own recvmsg() for every token.
With N streams in lockstep each token wave woke N threads, and each took the
GIL in turn: wake-ups, context switches and GIL hand-offs grew with the
stream count, and at 64 streams the reader's CPU per token was no longer
below a plain asyncio loop's (issue 34, docs/measurement.md). Here a worker
sends its request and reads the response head as before, then hands the
body's connection to the level's `SharedReader` and sleeps until the body
ends (or goes quiet, or the deadline passes). One thread waits in
epoll_wait() for all of them; a wake-up reads every socket that is ready
(one recvmsg() each, with the kernel's receive stamp, exactly as a worker
read it: rxstamp), so a token wave costs one wake-up, not N.

What a worker gets back is what `chunked.read_chunked_arrivals` gives: the
body's pieces with each network read's arrival time in `times`/`reads`,
and "end", "pause" (the stream went quiet for a tick with new pieces: the
caller parses and calls again) or "deadline"; transport errors are raised
in the worker's thread. So the adapters, their parsing and the row are the
same code whichever thread read the bytes.

The run-delay bound (adapters/rundelay.py) is per thread: here it is the
reading thread's. For the first WATCHED_READS reads of each body, the bytes
of a read arrived after the same socket's previous read began (that read
took all there was, unless it filled its buffer) and, when epoll_wait()
slept (no socket was ready when it was entered), after it was entered and
no earlier than its wake-up: the first packet woke the thread, which then
waited `run delay` for a CPU — so no earlier than the return from epoll_wait
less that run delay (less MARGIN_S). Whether it slept is judged as the
single-stream reader judges it: every read of the pass carries a stamp
later than the moment epoll_wait() was entered, and no read of the
previous pass filled its buffer.

`shared_reads()` makes a reader for the calling block (the lanes' level);
outside one, `active()` is None and every body is read in its own thread as
before (the single-stream base lane keeps its blocking read: one stream has
no one to share a thread with, and a hand-off would only add a hop).
"""

from __future__ import annotations

import select
import socket
import threading
import time
from contextlib import contextmanager
from typing import Any, Iterator

from benchpack.adapters import rundelay, rxstamp
from benchpack.adapters.chunked import WATCHED_READS, ChunkedDecoder
from benchpack.adapters.wireerrors import ReadError, ReadTimeout, RemoteProtocolError, TransportError

_READ = 65536
perf_counter = time.perf_counter
# How often the reader looks at every stream for quiet ticks, read timeouts and deadlines when no socket
# is ready (epoll_wait's timeout), and at most how long it goes without looking while sockets are busy.
SWEEP_S = 0.05
_DONTWAIT = getattr(socket, "MSG_DONTWAIT", 0)


class _Stream:
    """One body being read by the shared reader, and what its worker is waiting for."""

    __slots__ = ("conn", "decoder", "times", "reads", "deadline", "wire_times", "wire", "handed", "last_data",
                 "quiet_since", "stop", "error", "done", "watched", "before", "entered_prev", "stamp", "registered")

    def __init__(self, conn: Any, decoder: ChunkedDecoder, times: list[float], reads: list[bytes],
                 deadline: float, watch: bool) -> None:
        self.conn = conn
        self.decoder = decoder
        self.times = times
        self.reads = reads
        self.deadline = deadline
        self.wire_times: list[float] = []
        self.wire: list[bytes] = []
        self.handed = len(reads)
        self.last_data = perf_counter()
        self.quiet_since: float | None = None
        self.stop: str | None = None
        self.error: BaseException | None = None
        self.done = threading.Lock()
        self.done.acquire()  # released by the reader when the worker may go on
        self.watched = WATCHED_READS if watch else 0
        # The previous read's stamp (the head's, for the first): this read's bytes were not in it.
        self.before: float | None = getattr(conn, "arrived", None)
        self.entered_prev: float | None = None
        self.stamp: float | None = None
        self.registered = float("inf")  # when the reader began to watch the socket


class SharedReader:
    """An epoll thread that reads every handed-over body's socket as it becomes readable."""

    def __init__(self) -> None:
        self._epoll = select.epoll()
        self._streams: dict[int, _Stream] = {}
        self._lock = threading.Lock()  # guards _streams between the workers (add) and the reader (remove)
        # A pipe that wakes epoll_wait when a stream is added or the reader is closed.
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._epoll.register(self._wake_r.fileno(), select.EPOLLIN)
        self._closed = False
        self._watching = 0  # streams with watched reads left: the run delay is read only while there are some
        from benchpack.adapters.wire import QUIET_TICK_S  # wire imports this module: looked up once, here

        self._quiet_tick = QUIET_TICK_S
        self._thread = threading.Thread(target=self._run, name="benchpack-stream-reader", daemon=True)
        self._thread.start()

    # --- the worker's side -------------------------------------------------------------------------------

    def read_arrivals(self, conn: Any, decoder: ChunkedDecoder, times: list[float], reads: list[bytes],
                      deadline: float) -> str:
        """chunked.read_chunked_arrivals' contract, the reads done by the reader thread."""
        stream = _Stream(conn, decoder, times, reads, deadline,
                         watch=bool(getattr(conn, "stamped", False)) and getattr(conn, "earliest", None) is not None)
        if conn.buf:  # what came with the response head
            stream.wire_times.append(getattr(conn, "arrived", None) or perf_counter())
            stream.wire.append(conn.buf)
            conn.buf = b""
            data = stream.wire[-1]
            if (len(data) < 4 or data.endswith(b"\r\n\r\n")) and self._finish_if_done(stream):
                return self._result(stream)
        fd = conn.sock.fileno()
        with self._lock:
            if self._closed:
                raise ReadError("the shared stream reader is closed")
            self._streams[fd] = stream
            self._watching += stream.watched > 0
        try:
            self._epoll.register(fd, select.EPOLLIN)
        except OSError as exc:
            self._drop(fd)
            raise ReadError(str(exc)) from exc
        # Taken after the socket was added: a wait entered later was not woken by the adding. (The reader
        # may read the socket before this is set; it then takes the wake-up for the adding, which is safe.)
        stream.registered = perf_counter()
        # Wait for the reader; a reader that died (it never should) must not hang the worker for ever.
        while not stream.done.acquire(timeout=max(1.0, deadline - perf_counter() + 1.0)):
            if not self._thread.is_alive():
                self._drop(fd)
                raise ReadError("the shared stream reader stopped")
        return self._result(stream)

    @staticmethod
    def _result(stream: _Stream) -> str:
        if stream.error is not None:
            raise stream.error
        return stream.stop or "end"

    def close(self) -> None:
        with self._lock:
            self._closed = True
        try:
            self._wake_w.send(b"x")
        except OSError:
            pass
        self._thread.join(timeout=5)
        self._epoll.close()
        self._wake_r.close()
        self._wake_w.close()

    # --- the reader's side -------------------------------------------------------------------------------

    def _drop(self, fd: int) -> None:
        with self._lock:
            stream = self._streams.pop(fd, None)
            if stream is not None and stream.watched:
                self._watching -= 1
        try:
            self._epoll.unregister(fd)
        except (OSError, ValueError):
            pass

    def _finish(self, fd: int | None, stream: _Stream, stop: str | None = None,
                error: BaseException | None = None) -> None:
        """Hand the stream back to its worker: decode what is left, stop watching its socket, wake the worker."""
        if fd is not None:
            self._drop(fd)
        try:
            stream.decoder.decode_reads(stream.wire_times, stream.wire, stream.times, stream.reads)
        except TransportError as exc:
            error = error or exc
        conn = stream.conn
        if stream.decoder.done and error is None:
            conn.buf, conn.complete = stream.decoder.buf, True
            stop = "end"
        if stream.stamp is not None and getattr(conn, "stamped", False):
            conn.arrived = stream.stamp  # the newest read's stamp: where the body ended, when it has
        stream.stop, stream.error = stop, error
        stream.done.release()

    @staticmethod
    def _finish_if_done(stream: _Stream) -> bool:
        """Decode what arrived; True when the body ended (or its framing is broken)."""
        try:
            stream.decoder.decode_reads(stream.wire_times, stream.wire, stream.times, stream.reads)
        except TransportError as exc:
            stream.error = exc
            return True
        if stream.decoder.done:
            stream.conn.buf, stream.conn.complete = stream.decoder.buf, True
            stream.stop = "end"
            return True
        return False

    def _run(self) -> None:
        from benchpack.measurement import sched

        with sched.shortened():  # woken by a token: stamp it on time on a busy machine too
            try:
                self._serve()
            finally:
                with self._lock:
                    self._closed = True
                    left = list(self._streams.items())
                for fd, stream in left:
                    self._finish(fd, stream, error=ReadError("the shared stream reader stopped"))

    def _serve(self) -> None:
        poll = self._epoll.poll
        streams = self._streams
        wake_fd = self._wake_r.fileno()
        arrival = rxstamp.arrival
        ancillary_bytes = rxstamp.ANCILLARY_BYTES
        run_delay = rundelay.reader()
        pending_full = False  # a read of the previous pass filled its buffer: epoll_wait may not have slept
        last_sweep = perf_counter()
        while not self._closed:
            watching = run_delay is not None and self._watching > 0
            waited_before = run_delay() if watching else 0
            entered = perf_counter()
            ready = poll(SWEEP_S)
            woke = perf_counter()
            waited = (run_delay() - waited_before) * 1e-9 if watching else None
            # The earliest any byte of this pass can have arrived, if epoll_wait slept (checked per read below).
            slept_bound = max(entered, woke - waited - rundelay.MARGIN_S) if waited is not None else None
            full = False
            stamps_after_entry = not pending_full
            taken: list[tuple[_Stream, float, int, float]] = []  # watched reads: stream, stamp, size, read began
            # Streams that end in this pass are handed back after it, once their reads' bounds are known.
            ending: list[tuple[int, _Stream, str | None, BaseException | None]] = []
            for fd, _ in ready:
                stream = streams.get(fd)
                if stream is None:
                    if fd == wake_fd:
                        try:
                            self._wake_r.recv(4096)
                        except OSError:
                            pass
                    continue
                conn = stream.conn
                watched = stream.watched
                began = perf_counter() if watched else 0.0
                try:
                    if conn.stamped:
                        data, ancillary, _, _ = conn.sock.recvmsg(_READ, ancillary_bytes, _DONTWAIT)
                        now = perf_counter()
                        stamp = arrival(ancillary, conn.offset_ns, now)
                    else:
                        data = conn.sock.recv(_READ, _DONTWAIT)
                        now = stamp = perf_counter()
                except (BlockingIOError, InterruptedError):
                    continue
                except OSError as exc:
                    ending.append((fd, stream, None, ReadError(str(exc))))
                    continue
                if not data:
                    try:
                        stream.decoder.decode_reads(stream.wire_times, stream.wire, stream.times, stream.reads)
                    except TransportError:
                        pass
                    if stream.decoder.done:  # the peer closed right after a complete body
                        ending.append((fd, stream, "end", None))
                    else:
                        ending.append((fd, stream, None, RemoteProtocolError(
                            "peer closed connection without sending complete message body")))
                    continue
                stream.stamp = stamp
                stream.last_data = now
                stream.quiet_since = None
                if stamp <= entered:  # this socket had bytes when epoll_wait was entered: it did not sleep
                    stamps_after_entry = False
                if watched:
                    taken.append((stream, stamp, len(data), began))
                    if watched == 1:
                        with self._lock:
                            self._watching -= 1
                    stream.watched = watched - 1
                if len(data) == _READ:
                    full = True
                stream.wire_times.append(stamp)
                stream.wire.append(data)
                # A body's last 4 bytes are CRLF CRLF, so its last read ends so or is shorter than that.
                if (len(data) < 4 or data[-4:] == b"\r\n\r\n") and self._finish_if_done(stream):
                    ending.append((fd, stream, stream.stop, stream.error))
                elif now > stream.deadline:
                    ending.append((fd, stream, "deadline", None))
            for stream, stamp, size, began in taken:
                # A socket handed over during the wait woke it by being added, not by a packet.
                slept = stamps_after_entry and stream.registered < entered
                self._bound(stream, stamp, size, began, slept_bound if slept else None)
            for fd, stream, stop, error in ending:
                self._finish(fd, stream, stop, error)
            pending_full = full
            now = perf_counter()
            if not ready or now - last_sweep >= SWEEP_S:
                last_sweep = now
                self._sweep(now)

    @staticmethod
    def _bound(stream: _Stream, stamp: float, size: int, began: float, slept_bound: float | None) -> None:
        """The earliest moment this read's bytes can have arrived (the module doc says why), kept by stamp."""
        bound = stream.before
        if stream.entered_prev is not None:
            bound = max(bound or stream.entered_prev, stream.entered_prev)
        if slept_bound is not None and stamp > slept_bound:
            bound = max(bound or slept_bound, slept_bound)
        if bound is not None:
            stream.conn.earliest[stamp] = min(bound, stamp)
        full = size == _READ  # a full read may have left bytes waiting: the next one's bytes may be older
        stream.before = None if full else stamp
        stream.entered_prev = None if full else began

    def _sweep(self, now: float) -> None:
        """Quiet streams (a tick without data: pause with what arrived), read timeouts, deadlines."""
        for fd, stream in list(self._streams.items()):
            if now > stream.deadline:
                self._finish(fd, stream, "deadline")
                continue
            if now - stream.last_data < self._quiet_tick:
                continue
            try:
                stream.quiet_since = stream.conn.check_quiet(stream.quiet_since or stream.last_data, now)
            except ReadTimeout as exc:
                self._finish(fd, stream, error=exc)
                continue
            try:
                stream.decoder.decode_reads(stream.wire_times, stream.wire, stream.times, stream.reads)
            except TransportError as exc:
                self._finish(fd, stream, error=exc)
                continue
            if stream.decoder.done or len(stream.reads) > stream.handed:
                self._finish(fd, stream, "pause")


_active: SharedReader | None = None
_active_lock = threading.Lock()


def active() -> SharedReader | None:
    """The reader of the block being run (`shared_reads`), or None: each body is read in its own thread."""
    return _active


@contextmanager
def shared_reads() -> Iterator[SharedReader | None]:
    """Inside this block, chunked bodies read through wire are read by one shared thread (where epoll exists)."""
    global _active
    if not hasattr(select, "epoll"):
        yield None
        return
    reader = SharedReader()
    with _active_lock:
        previous, _active = _active, reader
    try:
        yield reader
    finally:
        with _active_lock:
            _active = previous
        reader.close()
