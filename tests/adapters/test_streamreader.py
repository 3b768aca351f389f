"""One thread reads a level's streams (benchpack.adapters.streamreader): the same rows, errors and bounds as a
thread per stream, with the body reads on that one thread."""

import re
import socket
import threading
import time
from contextlib import contextmanager

import pytest

from benchpack.adapters import AdapterRequest, rxstamp, streamreader
from benchpack.adapters.chunked import WATCHED_READS
from benchpack.adapters.openai_chat import OpenAIChatAdapter
from benchpack.refserver.server import RefServer
from tests.adapters.test_adapters_plain import EVENT, Scripted, closes_mid_stream, stalls_mid_stream
from tests.environment import needs

needs_stamps = needs(rxstamp.SUPPORTED, "no kernel receive timestamps on this system")
STREAMS = 16
TOKENS = 12


@contextmanager
def a_level():
    """A level's reader, bound in this thread as a level's worker binds it."""
    with streamreader.shared_reads() as reader, streamreader.serving(reader):
        yield reader


def run_in_threads(adapter, requests, reader=None):
    """Every request in its own thread at once, as the concurrency lane's workers send them (each binding
    `reader`, as they do); (result, trace, thread name) per request, in order."""
    out: list = [None] * len(requests)

    def go(i):
        with streamreader.serving(reader):
            result, trace = adapter.run_traced(requests[i])
        out[i] = (result, trace, threading.current_thread().name)

    threads = [threading.Thread(target=go, args=(i,), name=f"worker-{i}") for i in range(len(requests))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    return out


@pytest.fixture
def recvmsg_threads(monkeypatch):
    """The name of the thread behind every recvmsg() of a payload read (not the transmit stamps' error queue)."""
    seen: list[str] = []
    real = socket.socket.recvmsg

    def recording(self, *args):
        if len(args) < 3 or not args[2] & getattr(socket, "MSG_ERRQUEUE", 0):
            seen.append(threading.current_thread().name)
        return real(self, *args)

    monkeypatch.setattr(socket.socket, "recvmsg", recording)
    return seen


@needs_stamps
@pytest.mark.exclusive  # compares TTFT/TPOT with the server's own send times
def test_a_level_of_streams_is_read_by_one_thread_and_timed_by_the_kernels_stamps(recvmsg_threads):
    requests = [AdapterRequest(model="ref", prompt=f"[stream {i:02d}] hello", endpoint="", stream=True,
                               max_tokens=TOKENS, timeout_s=30) for i in range(STREAMS)]
    with RefServer(ttft_s=0.02, itl_s=0.01, default_tokens=TOKENS, timings=False, request_stamps=True,
                   models=["ref"]) as srv:
        for request in requests:
            request.endpoint = srv.openai_url
        adapter = OpenAIChatAdapter()
        try:
            with streamreader.shared_reads() as reader:
                # A warm-up round opens the connections, as a level's warm-up does: the server stamps a request's
                # arrival only on a connection it had set up before the request's bytes came.
                run_in_threads(adapter, requests, reader)
                srv.reset()
                recvmsg_threads.clear()
                out = run_in_threads(adapter, requests, reader)
        finally:
            adapter.close()
        records = {re.search(r"\[stream (\d\d)\]", r["body"]["messages"][0]["content"]).group(1): r
                   for r in srv.log() if r.get("content_times")}
    # The workers read their response heads and the body's first (watched) reads; every later read was the
    # shared reader's.
    shared_reads = [name for name in recvmsg_threads if not name.startswith("worker-")]
    assert set(shared_reads) == {"benchpack-stream-reader"}
    assert len(recvmsg_threads) - len(shared_reads) <= (2 + WATCHED_READS) * STREAMS
    assert len(shared_reads) >= STREAMS * (TOKENS - WATCHED_READS) // 2
    for i, (result, trace, _) in enumerate(out):
        assert result.ok, result.error
        assert result.tokens["output"] == TOKENS
        sent = records[f"{i:02d}"]["content_times"]
        truth_ttft = sent[0] - records[f"{i:02d}"]["arrived_at"]
        truth_tpot = (sent[-1] - sent[0]) / (len(sent) - 1)
        assert abs(result.timing["ttft_s"] - truth_ttft) < 0.005
        assert result.timing["tpot_s"] == pytest.approx(truth_tpot, rel=0.15)
        # The run-delay bounds of the watched reads (the worker's own): never after the moment the read's
        # first token was sent.
        assert trace.earliest, "the body's first reads are watched"
        for token, stamp in enumerate(trace.content_times):
            bound = trace.earliest.get(stamp)
            if bound is not None and (token == 0 or trace.content_times[token - 1] != stamp):
                assert bound <= stamp
                assert bound <= sent[token] + 0.001, (i, token, bound - sent[token])


def sends_spaced_events(conn, count=WATCHED_READS + 1):
    """The head, then `count` events in reads of their own: the last ones past the worker's watched reads."""
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
    for _ in range(count):
        time.sleep(0.03)
        conn.sendall(b"%x\r\n%s\r\n" % (len(EVENT), EVENT))


def closes_after_the_watched_reads(conn):
    sends_spaced_events(conn)
    time.sleep(0.05)


def stalls_after_the_watched_reads(conn):
    sends_spaced_events(conn)
    return "hold"


@pytest.mark.parametrize("script, expected", [
    (closes_after_the_watched_reads, "connection closed mid-stream after 4 events: peer closed connection without "
                                     "sending complete message body"),
    (stalls_after_the_watched_reads, "timed out after 0.6s (stream still running, 4 events received)"),
    (closes_mid_stream, "connection closed mid-stream after 1 events: peer closed connection without sending "
                        "complete message body"),
    (stalls_mid_stream, "timed out after 0.6s (stream still running, 1 events received)"),
])
def test_a_broken_stream_reads_the_same_through_the_shared_reader(script, expected):
    server = Scripted(script)
    adapter = OpenAIChatAdapter()
    request = AdapterRequest(model="m", prompt="hello", endpoint=server.url, max_tokens=4, stream=True, timeout_s=0.6)
    try:
        alone = adapter.run(request)
        with a_level():
            shared = adapter.run(request)
    finally:
        adapter.close()
        server.close()
    assert shared.error == alone.error == expected
    assert shared.output_text == alone.output_text
    assert shared.output_text.startswith("hi")


def test_a_stream_that_goes_quiet_is_parsed_while_it_waits_and_an_error_event_ends_it():
    # An error event, and then the server holds the stream open: the reader hands what it has to the worker
    # once the stream is quiet for a tick, the worker sees the error and stops (as a thread of its own does).
    release = threading.Event()
    error = b'data: {"error":{"message":"out of memory"}}\n\n'

    def script(conn):
        sends_spaced_events(conn)  # past the worker's own reads: the error comes to the shared reader
        conn.sendall(b"%x\r\n%s\r\n" % (len(error), error))
        release.wait(30)

    server = Scripted(script)
    adapter = OpenAIChatAdapter()
    started = time.perf_counter()
    try:
        with a_level():
            result = adapter.run(AdapterRequest(model="m", prompt="x", endpoint=server.url, stream=True,
                                                timeout_s=30))
        waited = time.perf_counter() - started
    finally:
        release.set()
        adapter.close()
        server.close()
    assert not result.ok and "out of memory" in result.error and result.output_text == "hi" * (WATCHED_READS + 1)
    assert waited < 5


def test_a_quiet_gap_inside_a_stream_does_not_end_it(recvmsg_threads):
    def script(conn):
        sends_spaced_events(conn)
        time.sleep(0.6)  # two quiet ticks: the shared reader hands the worker what it has, the worker calls again
        done = b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
        conn.sendall(b"%x\r\n%s\r\n0\r\n\r\n" % (len(done), done))

    server = Scripted(script)
    adapter = OpenAIChatAdapter()
    try:
        with a_level():
            result = adapter.run(AdapterRequest(model="m", prompt="x", endpoint=server.url, stream=True,
                                                timeout_s=10))
    finally:
        adapter.close()
        server.close()
    assert result.ok, result.error
    assert result.output_text == "hi" * (WATCHED_READS + 1) and result.finish_reason == "stop"
    assert "benchpack-stream-reader" in recvmsg_threads or not rxstamp.SUPPORTED


def test_only_the_threads_that_bind_a_levels_reader_reach_it():
    assert streamreader.active() is None
    seen = {}

    def other_thread():
        seen["other"] = streamreader.active()

    with streamreader.shared_reads() as reader:
        # Making a reader binds it to no thread: the level hands it to its own workers.
        assert streamreader.active() is None
        with streamreader.serving(reader):
            assert streamreader.active() is reader
            # A thread of another run (or any thread that did not bind it) reads its own bodies.
            thread = threading.Thread(target=other_thread)
            thread.start()
            thread.join()
            assert seen["other"] is None
        assert streamreader.active() is None
    assert streamreader.active() is None


def test_closing_one_levels_reader_leaves_another_levels_stream_and_a_stream_outside_any_level_whole(
        recvmsg_threads):
    # Two levels of two runs in one process, and requests outside any level. Level A opens, then level B; A's
    # request is sent after B opened and is mid-body (past its worker's own reads, on a shared reader) when
    # B's request ends and B's level closes its reader. With one process-wide reader A's request went to
    # the newest level's reader, B's, and was failed "the shared stream reader stopped" when B closed it
    # (the demo's six runs lost decode figures so: issue 34).
    a_open, b_open, a_mid, b_closed = (threading.Event() for _ in range(4))
    done = (b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],'
            b'"usage":{"prompt_tokens":1,"completion_tokens":%d}}\n\ndata: [DONE]\n\n' % (WATCHED_READS + 1))

    def long_stream(conn):
        sends_spaced_events(conn)  # past the worker's watched reads: the rest is the shared reader's
        time.sleep(0.05)
        a_mid.set()
        b_closed.wait(10)
        time.sleep(0.05)
        conn.sendall(b"%x\r\n%s\r\n0\r\n\r\n" % (len(done), done))

    def short_stream(conn):
        sends_spaced_events(conn)
        conn.sendall(b"%x\r\n%s\r\n0\r\n\r\n" % (len(done), done))

    slow, fast, other = Scripted(long_stream), Scripted(short_stream), Scripted(short_stream)
    adapter = OpenAIChatAdapter()
    results, readers = {}, {}

    def run(name, server):
        results[name] = adapter.run(AdapterRequest(model="m", prompt=name, endpoint=server.url, stream=True,
                                                   timeout_s=10))

    def level_a():
        with a_level() as reader:
            readers["a"] = reader
            a_open.set()
            b_open.wait(10)
            run("a", slow)
            readers["a open at its end"] = reader is None or not reader._closed

    def outside_any_level():  # while B's level is open, in a thread of its own that bound no reader
        b_open.wait(10)
        run("outside, during", other)

    try:
        threads = [threading.Thread(target=level_a, name="worker-a"),
                   threading.Thread(target=outside_any_level, name="outside")]
        threads[0].start()
        assert a_open.wait(10)
        with a_level() as reader_b:
            b_open.set()
            threads[1].start()
            assert a_mid.wait(10)
            run("b", fast)
        assert reader_b is None or reader_b._closed
        b_closed.set()
        run("outside, after", fast)  # this (main) thread bound B's reader inside the level: not any more
        for thread in threads:
            thread.join(15)
    finally:
        b_closed.set()
        adapter.close()
        for server in (slow, fast, other):
            server.close()
    assert readers["a"] is not reader_b and readers["a open at its end"]
    for name in ("a", "b", "outside, during", "outside, after"):
        result = results[name]
        assert result.ok, (name, result.error)
        assert result.output_text == "hi" * (WATCHED_READS + 1) and result.finish_reason == "stop"
        assert result.timing.get("tpot_s"), name
    if rxstamp.SUPPORTED:
        # The thread outside any level read its whole body itself.
        assert "outside" in recvmsg_threads and "benchpack-stream-reader" in recvmsg_threads
