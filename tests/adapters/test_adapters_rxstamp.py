"""Kernel receive timestamps: a chunk read late keeps the time it reached the machine (benchpack.adapters.rxstamp)."""

import socket
import struct
import threading
import time

import httpx
import pytest

from benchpack.adapters import rxstamp
from benchpack.adapters.fasttransport import FastHTTPTransport, arrival_reader, last_arrival
from benchpack.adapters.wire import earliest_arrivals
from tests.environment import needs

pytestmark = pytest.mark.exclusive  # asserts arrival stamps within 5-10 ms

needs_stamps = needs(rxstamp.SUPPORTED, "no kernel receive timestamps on this system")
GAP_S = 0.120    # between the server's two chunks
LATE_S = 0.060   # the reader starts this long after the first chunk went out


def serve_two_chunks(listener: socket.socket, sent: list[float]) -> None:
    conn, _ = listener.accept()
    with conn:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        request = b""
        while b"\r\n\r\n" not in request:
            request += conn.recv(65536)
        conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: text/plain\r\n\r\n")
        for piece in (b"first", b"second"):
            time.sleep(GAP_S)
            sent.append(time.perf_counter())
            conn.sendall(b"%x\r\n%s\r\n" % (len(piece), piece))
        time.sleep(GAP_S / 4)
        sent.append(time.perf_counter())  # the body's end
        conn.sendall(b"0\r\n\r\n")


def read_late(kernel_stamps: bool) -> tuple[list[float], list[bytes], list[float], dict]:
    """Two chunks GAP_S apart; the client looks at the socket only LATE_S after the first was sent."""
    listener = socket.create_server(("127.0.0.1", 0))
    sent: list[float] = []
    server = threading.Thread(target=serve_two_chunks, args=(listener, sent), daemon=True)
    server.start()
    try:
        with httpx.Client(transport=FastHTTPTransport(kernel_stamps=kernel_stamps)) as client:
            with client.stream("GET", f"http://127.0.0.1:{listener.getsockname()[1]}/") as response:
                seen = {"head": last_arrival(response), "head_read": time.perf_counter()}
                while not sent:
                    time.sleep(0.001)
                time.sleep(max(0.0, sent[0] + LATE_S - time.perf_counter()))  # sleeping: the server thread runs
                times: list[float] = []
                reads: list[bytes] = []
                reader = arrival_reader(response)
                while reader(times, reads, time.perf_counter() + 10) != "end":
                    pass
                seen["end"] = last_arrival(response)
                seen["earliest"] = earliest_arrivals(response)
    finally:
        server.join(5)
        listener.close()
    return times, reads, sent, seen


@needs_stamps
def test_a_chunk_read_late_keeps_the_time_it_arrived():
    times, reads, sent, seen = read_late(kernel_stamps=True)
    assert b"".join(reads) == b"firstsecond"
    assert [len(r) for r in reads] == [5, 6]
    # The first chunk waited LATE_S in the socket; its time is still within a few ms of its sending.
    assert 0 <= times[0] - sent[0] < 0.010
    assert 0 <= times[1] - sent[1] < 0.010
    assert abs((times[1] - times[0]) - (sent[1] - sent[0])) < 0.010
    # The head's arrival (ttfb) and the body's end (wall_s) are stamped the same way.
    assert seen["head"] is not None and seen["head"] <= seen["head_read"] and seen["head"] < sent[0]
    assert 0 <= seen["end"] - sent[2] < 0.010


def test_timed_in_user_space_the_same_chunk_is_charged_the_wait():
    # The baseline the kernel stamps remove (and what systems without them still get).
    times, reads, sent, seen = read_late(kernel_stamps=False)
    assert b"".join(reads) == b"firstsecond"
    assert times[0] - sent[0] >= LATE_S * 0.9
    assert seen["head"] is None and seen["end"] is None  # the caller reads its own clock


def test_without_a_stamp_or_with_one_from_the_future_the_user_space_reading_stands():
    offset = rxstamp.realtime_offset_ns()
    now = time.perf_counter()
    assert rxstamp.arrival([], offset, now) == now
    wall_ns = int(now * 1e9) + offset + 5_000_000_000  # 5 s after `now`: a clock step, not an arrival
    payload = struct.pack("@ll", wall_ns // 1_000_000_000, wall_ns % 1_000_000_000)
    assert rxstamp.arrival([(socket.SOL_SOCKET, 35, payload)], offset, now) == now
    earlier_ns = int((now - 0.25) * 1e9) + offset
    payload = struct.pack("@ll", earlier_ns // 1_000_000_000, earlier_ns % 1_000_000_000)
    assert rxstamp.arrival([(socket.SOL_SOCKET, 35, payload)], offset, now) == pytest.approx(now - 0.25, abs=1e-6)


def test_the_offset_between_the_clocks_is_tight():
    readings = [rxstamp.realtime_offset_ns() for _ in range(5)]
    assert max(readings) - min(readings) < 1_000_000  # well under a millisecond between readings
    assert abs(readings[0] / 1e9 - (time.time() - time.perf_counter())) < 0.01


@needs_stamps
def test_a_read_that_waited_in_recvmsg_says_how_early_its_bytes_can_have_arrived():
    from benchpack.adapters import rundelay

    times, reads, sent, seen = read_late(kernel_stamps=True)
    assert rundelay.reader() is not None, "no /proc/thread-self/schedstat on this Linux"
    # "first" was waiting in the socket when the reader came (late): it was not in the read before it (the
    # response head), so it arrived after that read's stamp, and that is all that is known.
    assert seen["earliest"][times[0]] == seen["head"] < sent[0]
    # "second" came while the reader was blocked in recvmsg: it arrived after the read began and at most the
    # read's run delay (plus a margin) before the read's stamp.
    bound = seen["earliest"][times[1]]
    assert bound <= times[1] and times[1] - bound < 0.005
    assert bound <= sent[1] + 0.001
