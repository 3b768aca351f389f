"""A request's clock starts when its last byte left, not when the thread that sends it began (rxstamp.sent_at).

With 16 or 64 streams in one process, a thread reads the clock, then waits
for the GIL while other streams build and send their requests; that wait
used to be inside its TTFT. Here the wait is made explicit (the request is
held up for HOLD_S before or after it goes out) and the TTFT is compared
with the scripted server's own: request read → first content token sent.
"""

import socket
import statistics
import time

import pytest

from benchpack.adapters import rxstamp
from benchpack.adapters.base import AdapterRequest
from benchpack.adapters.fasttransport import FastHTTPTransport
from benchpack.adapters.openai_chat import OpenAIChatAdapter
from benchpack.adapters.transport import LeanClient
from benchpack.refserver.server import RefServer
from tests.environment import needs

pytestmark = pytest.mark.exclusive  # asserts send stamps within 5-25 ms

needs_stamps = needs(rxstamp.SUPPORTED, "no kernel timestamps on this system")
HOLD_S = 0.050
TTFT_S = 0.030


class _HeldSocket:
    """A socket whose sendall() returns HOLD_S late: the sending thread was descheduled right after the send."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock

    def sendall(self, data: bytes) -> None:
        self._sock.sendall(data)
        time.sleep(HOLD_S)

    def __getattr__(self, name):
        return getattr(self._sock, name)


class HeldBeforeSend(FastHTTPTransport):
    """The request is held up HOLD_S between the start of the clock and the send (building it, the GIL)."""

    @staticmethod
    def _serialize(request):
        time.sleep(HOLD_S)
        return FastHTTPTransport._serialize(request)


class HeldAfterSend(FastHTTPTransport):
    def _acquire(self, key, timeouts, fresh=False):
        conn, reused = super()._acquire(key, timeouts, fresh)
        if not isinstance(conn.sock, _HeldSocket):
            conn.sock = _HeldSocket(conn.sock)
        return conn, reused


def ttft_errors(transport: FastHTTPTransport, requests: int = 5) -> list[float]:
    """Client TTFT − the server's (request read → first content sent), per request, after one warm-up."""
    adapter = OpenAIChatAdapter(LeanClient(transport))
    errors = []
    try:
        with RefServer(ttft_s=TTFT_S, itl_s=0.002, default_tokens=4) as srv:
            for number in range(requests + 1):
                srv.reset()
                result, trace = adapter.run_traced(AdapterRequest(
                    model="ref", prompt=f"hello {number}", endpoint=srv.openai_url, max_tokens=4, stream=True,
                    temperature=None))
                assert result.ok, result.error
                (record,) = srv.log()
                if number:
                    errors.append(trace.content_times[0] - trace.start
                                  - (record["content_times"][0] - record["received_at"]))
    finally:
        adapter.close()
    return errors


def test_time_before_the_send_is_not_in_ttft():
    errors = ttft_errors(HeldBeforeSend())
    # Before: every TTFT carried the 50 ms hold. Now what is left is delivery both ways (well under a
    # millisecond on a quiet machine; the median keeps a busy machine's stray wake-up out).
    assert -0.010 < statistics.median(errors) < 0.025, errors


@needs_stamps
def test_start_is_the_kernel_transmit_stamp_not_when_sendall_returned():
    errors = ttft_errors(HeldAfterSend())
    # The reading taken as sendall() returned is 50 ms late; the kernel's stamp is not, so TTFT is not 50 ms short.
    assert -0.010 < statistics.median(errors) < 0.025, errors


@needs_stamps
def test_sent_at_reads_the_stamp_and_empties_the_error_queue():
    listener = socket.create_server(("127.0.0.1", 0))
    client = socket.create_connection(listener.getsockname())
    server, _ = listener.accept()
    try:
        assert rxstamp.enable_tx(client)
        offset = rxstamp.realtime_offset_ns()
        for size in (10, 60_000):  # one segment; several
            before = time.perf_counter()
            client.sendall(b"x" * size)
            now = time.perf_counter()
            time.sleep(0.01)  # a stamp read later is still the send's
            sent = rxstamp.sent_at(client, offset, before, now)
            assert before <= sent < now or sent == now
            assert sent != now, "loopback stamps every transmitted packet"
            assert rxstamp.drain_tx(client) is None  # nothing left to make the socket look readable
            received = 0
            while received < size:
                received += len(server.recv(1 << 20))
    finally:
        for sock in (client, server, listener):
            sock.close()


def test_sent_at_falls_back_to_the_reading_without_a_stamp():
    a, b = socket.socketpair()
    try:
        a.sendall(b"x")
        assert rxstamp.sent_at(a, 0, 1.0, 2.0) == 2.0
    finally:
        a.close()
        b.close()


@needs_stamps
def test_the_reference_server_records_when_a_request_arrived():
    from benchpack.adapters.fasttransport import FastHTTPTransport as Plain

    adapter = OpenAIChatAdapter(LeanClient(Plain()))
    try:
        with RefServer(ttft_s=TTFT_S, itl_s=0.002, default_tokens=4, request_stamps=True) as srv:
            for number in range(3):
                srv.reset()
                result, trace = adapter.run_traced(AdapterRequest(
                    model="ref", prompt=f"hello {number}", endpoint=srv.openai_url, max_tokens=4, stream=True,
                    temperature=None))
                assert result.ok, result.error
                (record,) = srv.log()
                # The kernel's arrival stamp: after the client's send (on loopback the two stamps are
                # microseconds apart, each converted with its own process's clock offset), before the server
                # read the request.
                assert trace.start - 50e-6 <= record["arrived_at"] <= record["received_at"]
                assert record["arrived_at"] - trace.start < 0.005
        with RefServer(ttft_s=TTFT_S, itl_s=0.002, default_tokens=4) as srv:  # off by default
            assert adapter.run(AdapterRequest(model="ref", prompt="x", endpoint=srv.openai_url, max_tokens=4,
                                              stream=True, temperature=None)).ok
            assert srv.log()[0]["arrived_at"] is None
    finally:
        adapter.close()


def test_tpot_starts_at_the_newest_token_of_a_late_first_read():
    from benchpack.adapters.base import StreamTrace, time_per_output_token

    # Tokens every 10 ms from t=1.00; the reader got to the stream at 1.02: tokens 1-3 share that read's time.
    late = StreamTrace(content_times=[1.02, 1.02, 1.02, 1.03, 1.04, 1.05])
    assert abs(time_per_output_token(late, 6) - 0.010) < 1e-12  # was (1.05 - 1.02) / 5 = 6 ms
    on_time = StreamTrace(content_times=[1.00, 1.01, 1.02, 1.03])
    assert abs(time_per_output_token(on_time, 4) - 0.010) < 1e-12
    batched = StreamTrace(content_times=[1.00, 1.02, 1.04])  # two tokens per chunk, 10 ms per token
    assert abs(time_per_output_token(batched, 6) - 0.008) < 1e-12  # (0.04) / 5: the average, as before
    one_read = StreamTrace(content_times=[1.0, 1.0, 1.0])  # one read says nothing about the spacing
    assert time_per_output_token(one_read, 3) is None


def test_a_first_read_that_was_woken_on_time_is_not_spread_back_at_the_streams_spacing():
    from benchpack.adapters.base import StreamTrace, time_per_output_token

    # The server wrote tokens 1-3 in a burst (1.018-1.020), then one every 10 ms; the reader, blocked in
    # recvmsg, was woken by the first and waited 2 ms for a CPU (the run delay), so all three came in one read
    # stamped 1.020. Without that knowledge the first token is placed 20 ms earlier (10 ms spacing).
    times = [1.02, 1.02, 1.02, 1.03, 1.04, 1.05]
    truth = (1.05 - 1.018) / 5
    unwatched = StreamTrace(content_times=times)
    assert abs(time_per_output_token(unwatched, 6) - 0.010) < 1e-12  # 56 % off the truth
    watched = StreamTrace(content_times=times, earliest={1.02: 1.02 - 0.002 - 0.0005})
    assert abs(time_per_output_token(watched, 6) - truth) / truth < 0.02
    # Woken late (a run delay longer than the tokens' spread): the spacing still places the first token.
    late = StreamTrace(content_times=times, earliest={1.02: 1.02 - 0.025})
    assert abs(time_per_output_token(late, 6) - 0.010) < 1e-12
    # A bound after the read's own stamp is not believed past the stamp.
    odd = StreamTrace(content_times=times, earliest={1.02: 1.03})
    assert abs(time_per_output_token(odd, 6) - (1.05 - 1.02) / 5) < 1e-12


def test_ttft_of_a_late_first_read_is_the_first_tokens_arrival_not_the_newest():
    from benchpack.adapters.base import StreamTrace, compute_timing

    # Sent at 1.00; tokens every 10 ms from 1.03; the reader got to the stream at 1.05, so tokens 1-3 share
    # that read's stamp (the newest packet's). TTFT is the first token's arrival, 30 ms, not 50.
    late = StreamTrace(start=1.0, end=1.08, content_times=[1.05, 1.05, 1.05, 1.06, 1.07, 1.08])
    timing = compute_timing(late, 6, 10, streamed=True)
    assert abs(timing["ttft_s"] - 0.030) < 1e-9 and abs(timing["tpot_s"] - 0.010) < 1e-9
    # The same read, watched: woken on time by a burst (the server sent the three at 1.048-1.05).
    burst = StreamTrace(start=1.0, end=1.08, content_times=late.content_times, earliest={1.05: 1.0475})
    timing = compute_timing(burst, 6, 10, streamed=True)
    assert abs(timing["ttft_s"] - 0.0475) < 1e-9
    # One chunk in the first read: its own time, as always.
    prompt = StreamTrace(start=1.0, end=1.06, content_times=[1.03, 1.04, 1.05, 1.06])
    assert abs(compute_timing(prompt, 4, 10, streamed=True)["ttft_s"] - 0.030) < 1e-9
