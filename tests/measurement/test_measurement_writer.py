import socket
import statistics
import threading
import time

import pytest

from benchpack.measurement.writer import TimedWriter

pytestmark = pytest.mark.exclusive  # asserts write times within tens of ms

perf_counter = time.perf_counter


@pytest.fixture
def writer():
    w = TimedWriter()
    yield w
    w.stop()


def pair():
    a, b = socket.socketpair()
    b.settimeout(10)
    return a, b


def read_exactly(sock, n):
    data = b""
    while len(data) < n:
        data += sock.recv(n - len(data))
    return data


def test_each_stream_keeps_its_own_schedule_and_order(writer):
    streams, readers, logs = [], [], []
    # Spacings of 10-45 ms: a loaded machine's ms of scheduling jitter must not
    # decide the ±25 % spacing check (at 2 ms it failed under load 12).
    start = perf_counter() + 0.05
    for s in range(8):
        a, b = pair()
        stream, log = writer.stream(a), []
        itl = 0.010 + s * 0.005  # every stream its own spacing
        for i in range(10):
            stream.write(b"%d:%d;" % (s, i), start + i * itl, lambda before, after, i=i, log=log: log.append((i, before)))
        streams.append((stream, itl, a))
        readers.append(b)
        logs.append(log)
    for stream, _, _ in streams:
        stream.flush()
    for s, ((stream, itl, a), b, log) in enumerate(zip(streams, readers, logs)):
        expected = b"".join(b"%d:%d;" % (s, i) for i in range(10))
        assert read_exactly(b, len(expected)) == expected
        assert [i for i, _ in log] == list(range(10))
        for i, before in log:
            assert before >= start + i * itl  # never early
        # The median gap, not the mean from first to last: one write held up by the machine (a late first write
        # at load 24 shrank the mean by a third) moves two gaps, never the median of nine.
        gaps = [after[1] - before[1] for before, after in zip(log, log[1:])]
        assert statistics.median(gaps) == pytest.approx(itl, rel=0.25)
        a.close()
        b.close()


def test_a_write_without_a_time_follows_the_previous_one(writer):
    a, b = pair()
    stream = writer.stream(a)
    late = perf_counter() + 0.05
    stream.write(b"first", late)
    stream.write(b"second")
    stream.write(b"third", late - 0.04)  # planned earlier than what precedes it: it waits its turn
    stream.flush()
    assert perf_counter() >= late
    assert read_exactly(b, 16) == b"firstsecondthird"
    a.close()
    b.close()


def test_a_client_that_stops_reading_holds_up_only_its_own_stream(writer):
    stalled, stalled_peer = pair()
    stalled.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    stalled_peer.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    big = b"x" * 2_000_000
    slow_stream = writer.stream(stalled)
    slow_stream.write(big)
    slow_stream.write(b"END", perf_counter() + 0.01)
    flushed = threading.Event()
    threading.Thread(target=lambda: (slow_stream.flush(), flushed.set()), daemon=True).start()

    a, b = pair()
    stream, times = writer.stream(a), []
    start = perf_counter() + 0.01
    for i in range(5):
        stream.write(b"t", start + i * 0.005, lambda before, after: times.append(before))
    stream.flush()
    assert read_exactly(b, 5) == b"ttttt"
    assert times[-1] - start < 0.5  # not behind the 2 MB nobody reads
    assert not flushed.is_set()
    assert read_exactly(stalled_peer, len(big) + 3) == big + b"END"  # the rest arrives once the client reads
    assert flushed.wait(10)
    for sock in (stalled, stalled_peer, a, b):
        sock.close()


def test_a_client_gone_is_reported_to_the_handler(writer):
    a, b = pair()
    b.close()
    stream = writer.stream(a)
    for i in range(3):
        stream.write(b"data" * 1000, perf_counter() + 0.001 * i)
    with pytest.raises(OSError):
        stream.flush()
    a.close()
    # The writer still serves other streams.
    c, d = pair()
    other = writer.stream(c)
    other.write(b"ok")
    other.flush()
    assert read_exactly(d, 2) == b"ok"
    c.close()
    d.close()
