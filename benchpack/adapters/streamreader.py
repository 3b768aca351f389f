"""One reading thread for many streams: a level's response bodies read from one epoll loop.

Why: the concurrency and rate lanes run every request in its own worker
thread, and that thread used to wait in its own recvmsg() for every token.
With N streams in lockstep each token wave woke N threads, and each took the
GIL in turn: wake-ups, context switches and GIL hand-offs grew with the
stream count, and at 64 streams the reader's CPU per token was no longer
below a plain asyncio loop's (issue 34, docs/measurement.md). Here a worker
sends its request and reads the response head and the body's first reads
as before (see below), then hands the connection to the level's
`SharedReader` and sleeps until the body ends (or goes quiet, or the
deadline passes). One thread waits in
epoll_wait() for all of them; a wake-up reads every socket that is ready
(one recvmsg() each, with the kernel's receive stamp, exactly as a worker
read it: rxstamp), then waits GATHER_S before it looks again, so the
tokens of many streams cost one wake-up, not one each.

What a worker gets back is what `chunked.read_chunked_arrivals` gives: the
body's pieces with each network read's arrival time in `times`/`reads`,
and "end", "pause" (the stream went quiet for a tick with new pieces: the
caller parses and calls again) or "deadline"; transport errors are raised
in the worker's thread. So the adapters, their parsing and the row are the
same code whichever thread read the bytes.

The run-delay bound (adapters/rundelay.py) is per thread: it says how
long the thread that made a read waited for a CPU, and a thread that
blocked in recvmsg() was woken by that read's first packet, which is what
makes the bound tight. One thread serving every ready socket is woken by
whichever packet came first, and when it is late, it is late for all of
them: a bound from its wait is valid but loose, and at 64 streams on a
loaded machine that let a first read holding two tokens (a server catching
up, 3.7 ms apart) be placed by the stream's spacing, 6.7 ms early. So the
worker makes the body's first WATCHED_READS reads itself, watched as
before (chunked.read_chunked_arrivals with `watched_only`), and hands the
connection over after them: the first token's time and its bound are what
they were, and the reads after them need none (TPOT spans the first token
to the last, and the last read's stamp is the last token's own).

Who reaches a reader: `shared_reads()` makes one for a block (a lane's
level) and the block passes it to its own worker threads, each of which
binds it for itself (`serving`, a thread-local). Every other thread —
another run's levels in the same process, a request outside any level —
finds `active()` None and reads its body in its own thread as before (the
single-stream base lane keeps its blocking read: one stream has no one to
share a thread with, and a hand-off would only add a hop). So closing one
level's reader can fail only that level's own requests, and only those
still on the wire when it closes (an interrupted level).
"""

from __future__ import annotations

import select
import socket
import threading
import time
from contextlib import contextmanager
from typing import Any, Iterator

from benchpack.adapters import rxstamp
from benchpack.adapters.chunked import ChunkedDecoder, read_chunked_arrivals
from benchpack.adapters.wireerrors import ReadError, ReadTimeout, RemoteProtocolError, TransportError

_READ = 65536
perf_counter = time.perf_counter
# How often the reader looks at every stream for quiet ticks, read timeouts and deadlines when no socket
# is ready (epoll_wait's timeout), and at most how long it goes without looking while sockets are busy.
SWEEP_S = 0.05
# After a pass that read something, the reader waits this long before it looks again, so the tokens other
# streams receive meanwhile are read in one wake-up instead of one each (the streams of a level are not in
# lockstep: woken by every packet, the reader took 1–1.5 sockets per wake-up at 16 streams). No figure of a
# row moves: each read keeps its kernel stamp, the first token's reads are the worker's own, and TPOT spans
# the first token to the last, whose read's stamp is its own. What moves: a worker hears of its body's end
# up to this much later (its next request is sent that much later and records when it was sent), and at
# under a millisecond per token two tokens of one stream may share a read in mid-stream.
GATHER_S = 0.001
_DONTWAIT = getattr(socket, "MSG_DONTWAIT", 0)


class _Stream:
    """One body being read by the shared reader, and what its worker is waiting for."""

    __slots__ = ("conn", "decoder", "times", "reads", "deadline", "wire_times", "wire", "handed", "last_data",
                 "quiet_since", "stop", "error", "done", "stamp")

    def __init__(self, conn: Any, decoder: ChunkedDecoder, times: list[float], reads: list[bytes],
                 deadline: float) -> None:
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
        self.stamp: float | None = None


class SharedReader:
    """An epoll thread that reads every handed-over body's socket as it becomes readable."""

    def __init__(self) -> None:
        self._epoll = select.epoll()
        self._streams: dict[int, _Stream] = {}
        self._lock = threading.Lock()  # guards _streams between the workers (add) and the reader (remove)
        # A socket pair that wakes epoll_wait when the reader is closed (adding a socket wakes it by itself).
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._epoll.register(self._wake_r.fileno(), select.EPOLLIN)
        self._closed = False
        from benchpack.adapters.wire import QUIET_TICK_S  # wire imports this module: looked up once, here

        self._quiet_tick = QUIET_TICK_S
        self._thread = threading.Thread(target=self._run, name="benchpack-stream-reader", daemon=True)
        self._thread.start()

    # --- the worker's side -------------------------------------------------------------------------------

    def read_arrivals(self, conn: Any, decoder: ChunkedDecoder, times: list[float], reads: list[bytes],
                      deadline: float) -> str:
        """chunked.read_chunked_arrivals' contract, the reads after the body's first ones done by the reader
        thread (`times`/`reads` still empty: this body's first call, whose first reads are this thread's)."""
        if not times and not reads:
            stop = read_chunked_arrivals(conn, decoder, times, reads, deadline, watched_only=True)
            if stop != "watched":
                return stop
        stream = _Stream(conn, decoder, times, reads, deadline)
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
        try:
            self._epoll.register(fd, select.EPOLLIN)
        except OSError as exc:
            self._drop(fd)
            raise ReadError(str(exc)) from exc
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
            self._streams.pop(fd, None)
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
        last_sweep = perf_counter()
        sleep = time.sleep
        while not self._closed:
            ready = poll(SWEEP_S)
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
                    self._finish(fd, stream, error=ReadError(str(exc)))
                    continue
                if not data:
                    try:
                        stream.decoder.decode_reads(stream.wire_times, stream.wire, stream.times, stream.reads)
                    except TransportError:
                        pass
                    if stream.decoder.done:  # the peer closed right after a complete body
                        self._finish(fd, stream, "end")
                    else:
                        self._finish(fd, stream, error=RemoteProtocolError(
                            "peer closed connection without sending complete message body"))
                    continue
                stream.stamp = stamp
                stream.last_data = now
                stream.quiet_since = None
                stream.wire_times.append(stamp)
                stream.wire.append(data)
                # A body's last 4 bytes are CRLF CRLF, so its last read ends so or is shorter than that.
                if (len(data) < 4 or data[-4:] == b"\r\n\r\n") and self._finish_if_done(stream):
                    self._finish(fd, stream, stream.stop, stream.error)
                elif now > stream.deadline:
                    self._finish(fd, stream, "deadline")
            if ready:
                sleep(GATHER_S)
            now = perf_counter()
            if now - last_sweep >= SWEEP_S:
                last_sweep = now
                self._sweep(now)

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


# Which reader a thread's bodies go to: set only in a level's own worker threads (`serving`), for that
# level's own reader. Not a process-wide "current reader": several runs share a process (the registry's demo
# seeds six at once, each in its own thread) and one level's reader closing must never reach another run's
# requests, nor a request made outside any level (issue 34; a process-wide reader was reverted for that).
_local = threading.local()


def active() -> SharedReader | None:
    """The reader of the level whose worker is this thread (`serving`), or None: the body is read in this
    thread, as every request outside a level's workers is."""
    return getattr(_local, "reader", None)


@contextmanager
def serving(reader: SharedReader | None) -> Iterator[None]:
    """Inside this block, the chunked bodies this thread reads through wire go to `reader` (a level's
    worker thread wraps its life in it; None: read in this thread)."""
    previous = getattr(_local, "reader", None)
    _local.reader = reader
    try:
        yield
    finally:
        _local.reader = previous


@contextmanager
def shared_reads() -> Iterator[SharedReader | None]:
    """A reader for one block (a lane's level), closed when the block ends; None where there is no epoll.

    It is bound to no thread by this: the block hands it to its own worker threads, each of which binds it
    for itself (`serving`), so only they can reach it."""
    if not hasattr(select, "epoll"):
        yield None
        return
    reader = SharedReader()
    try:
        yield reader
    finally:
        reader.close()
