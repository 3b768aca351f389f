"""Transfer-Encoding: chunked, decoded for a timed read of the body.

`ChunkedDecoder` is a push decoder (bytes in, body bytes out).
`read_chunked_arrivals` is the loop that waits on the network while a
response streams: per read it only calls recv(), reads the clock and
appends, and leaves the framing to `ChunkedDecoder.decode_reads` in
batches (docs/measurement.md says why). `chunked_pieces` is the plain
iterator form. The connection is anything with `sock`, `buf`,
`key`, `complete` and `check_quiet` (wire.Conn). Errors are
wire's own (wireerrors).
"""

from __future__ import annotations

import socket
import time
from typing import Any, Iterator

from benchpack.adapters import rundelay, rxstamp
from benchpack.adapters.wireerrors import ReadError, RemoteProtocolError

_CRLF = b"\r\n"
_READ = 65536
perf_counter = time.perf_counter


class ChunkedDecoder:
    """Transfer-Encoding: chunked, pushed one network read at a time."""

    __slots__ = ("buf", "remaining", "done")

    def __init__(self) -> None:
        self.buf = b""  # undecoded bytes; after the end, whatever followed the body
        self.remaining = -1  # bytes left in the chunk; -1: size line next, -2: CRLF after data, -3: trailers
        self.done = False

    def feed(self, data: bytes) -> bytes:
        """The body bytes `data` completes, b"" if none; sets `done` at the end of the body."""
        buf = self.buf + data if self.buf else data
        remaining = self.remaining
        out = []
        while True:
            if remaining > 0:
                if not buf:
                    break
                piece = buf[:remaining]
                buf = buf[remaining:]
                remaining -= len(piece)
                out.append(piece)
                if remaining:
                    break
                remaining = -2
            if remaining == -2:
                if len(buf) < 2:
                    break
                if buf[:2] != _CRLF:
                    raise RemoteProtocolError("malformed chunked body: missing CRLF after chunk")
                buf = buf[2:]
                remaining = -1
            end = buf.find(_CRLF)
            if end < 0:
                break
            line, buf = buf[:end], buf[end + 2:]
            if remaining == -3:  # trailer lines until the empty line
                if not line:
                    self.done = True
                    break
                continue
            try:
                remaining = int(line.split(b";", 1)[0], 16)
            except ValueError:
                raise RemoteProtocolError(f"malformed chunk size line: {line[:40]!r}") from None
            if remaining == 0:
                remaining = -3
        self.buf = buf
        self.remaining = remaining
        return (b"".join(out) if len(out) > 1 else out[0]) if out else b""


    def decode_reads(self, wire_times: list[float], wire: list[bytes], times: list[float],
                     reads: list[bytes]) -> None:
        """Decode network reads in a batch: each read's body bytes, with its time, go to `times`/`reads`.

        Consumes `wire_times`/`wire`. A read that is exactly one whole chunk
        (one server write, the usual case) takes a find, an int() and a slice.
        """
        for now, data in zip(wire_times, wire):
            if self.done:  # bytes after the body belong to the next response
                self.buf += data
                continue
            piece = None
            if self.remaining == -1 and not self.buf and data.endswith(_CRLF):
                end = data.find(_CRLF)
                try:
                    size = int(data[:end], 16) if end > 0 else 0
                except ValueError:
                    size = 0
                if size > 0 and len(data) == end + 4 + size:
                    piece = data[end + 2:-2]
            if piece is None:
                piece = self.feed(data)
            if piece:
                times.append(now)
                reads.append(piece)
        wire_times.clear()
        wire.clear()


def chunked_pieces(conn: Any, decoder: ChunkedDecoder | None = None) -> Iterator[bytes]:
    """The chunked body as an iterator, one piece per network read that carried body bytes."""
    decoder = decoder or ChunkedDecoder()
    data, conn.buf = conn.buf, b""
    while True:
        if data:
            piece = decoder.feed(data)
            if piece:
                yield piece
            if decoder.done:
                conn.buf, conn.complete = decoder.buf, True
                return
        data = conn.recv()


# The body's first reads (the first token's among them) are watched for how long the reader waited to run.
WATCHED_READS = 3


def read_chunked_arrivals(conn: Any, decoder: ChunkedDecoder, times: list[float], reads: list[bytes],
                           deadline: float, watched_only: bool = False) -> str:
    # The loop that waits on the network. Per read it does one recv() system
    # call, one clock reading, two appends and two cheap checks, nothing
    # more: on this kind of machine each further piece of code touched
    # between two waits costs microseconds (docs/measurement.md). The
    # chunked framing is decoded afterwards, in a batch: when a read may end
    # the body, when the stream goes quiet for a kernel tick, at the
    # deadline, or when the read fails (what arrived is still handed up).
    # Where the kernel stamps received packets (rxstamp), a read's time is
    # that stamp: the moment its bytes reached the machine, whichever
    # thread got to them and whenever.
    recv = conn.sock.recv
    recvmsg = conn.sock.recvmsg if getattr(conn, "stamped", False) else None
    offset_ns = getattr(conn, "offset_ns", 0)
    arrival = rxstamp.arrival
    ancillary_bytes = rxstamp.ANCILLARY_BYTES
    wire_times: list[float] = []
    wire: list[bytes] = []
    add_time = wire_times.append
    add = wire.append
    if conn.buf:  # what came with the response head
        add_time(getattr(conn, "arrived", None) or perf_counter())
        add(conn.buf)
        conn.buf = b""
    quiet_since = None
    handed = len(reads)
    stamp = None
    # For the first reads, the earliest moment their bytes can have arrived (rundelay says why): a read
    # that blocked was woken by its first packet and copied after waiting `run delay` for a CPU.
    earliest = getattr(conn, "earliest", None)
    run_delay = rundelay.reader() if recvmsg is not None and earliest is not None else None
    watched = WATCHED_READS if run_delay is not None else 0
    # A read's bytes were not in the read before it, so they arrived after that read copied its own,
    # which was no earlier than its stamp (the response head's, for the body's first read).
    before = getattr(conn, "arrived", None)
    try:
        while True:
            try:
                if recvmsg is None:
                    data = recv(_READ)
                    now = stamp = perf_counter()
                elif watched:
                    waited = run_delay()
                    entered = perf_counter()
                    data, ancillary, _, _ = recvmsg(_READ, ancillary_bytes)
                    now = perf_counter()
                    waited = (run_delay() - waited) * 1e-9
                    stamp = arrival(ancillary, offset_ns, now)
                    watched -= 1
                    bound = before
                    if stamp > entered:  # it blocked: nothing in it arrived before `entered`
                        bound = max(bound or entered, entered, stamp - waited - rundelay.MARGIN_S)
                    if bound is not None:
                        earliest[stamp] = bound
                    before = stamp if len(data) < _READ else None  # a full read may have left bytes waiting
                else:
                    data, ancillary, _, _ = recvmsg(_READ, ancillary_bytes)
                    now = perf_counter()
                    stamp = arrival(ancillary, offset_ns, now)
            except (BlockingIOError, socket.timeout):  # SO_RCVTIMEO tick: the stream is quiet
                now = perf_counter()
                quiet_since = conn.check_quiet(quiet_since, now)
                if now > deadline:
                    return "deadline"
                decoder.decode_reads(wire_times, wire, times, reads)
                if decoder.done:
                    conn.buf, conn.complete = decoder.buf, True
                    return "end"
                if len(reads) > handed:
                    return "pause"
                continue
            except OSError as exc:
                raise ReadError(str(exc)) from exc
            if not data:
                decoder.decode_reads(wire_times, wire, times, reads)
                if decoder.done:  # the peer closed right after a complete body
                    conn.complete = True
                    return "end"
                raise RemoteProtocolError("peer closed connection without sending complete message body")
            quiet_since = None
            add_time(stamp)
            add(data)
            # A body's last 4 bytes are always CRLF CRLF, so its last read
            # ends so or is shorter than that (servers such as llama-server
            # write "0\r\n" and "\r\n" apart). Some other reads pass too.
            if len(data) < 4 or data.endswith(b"\r\n\r\n"):
                decoder.decode_reads(wire_times, wire, times, reads)
                if decoder.done:
                    conn.buf, conn.complete = decoder.buf, True
                    return "end"
            if now > deadline:
                return "deadline"
            if watched_only and not watched:
                # The caller reads the rest elsewhere (adapters/streamreader.py): the body's first reads, whose
                # run-delay bounds are this thread's, are done.
                decoder.decode_reads(wire_times, wire, times, reads)
                if decoder.done:
                    conn.buf, conn.complete = decoder.buf, True
                    return "end"
                return "watched"
    finally:
        decoder.decode_reads(wire_times, wire, times, reads)
        if recvmsg is not None and stamp is not None:
            conn.arrived = stamp  # the newest read's stamp: where the body ended, when it has
