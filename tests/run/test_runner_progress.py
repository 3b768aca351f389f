import io

from rich.console import Console

from benchpack.run.progress import PlainProgress, RichProgress, progress_for
from benchpack.run.runner import run_pack
from tests.run.test_runner_support import ScriptedAdapter, failed_result, make_pack, options


class FakeTerminal(io.StringIO):
    def isatty(self):
        return True


def test_it_prints_one_plain_line_per_execution_when_not_a_terminal(tmp_path):
    stream = io.StringIO()
    pack = make_pack(tmp_path, ["short", "long"], warmup=1, repetitions=2)
    run_pack(pack, options(tmp_path), progress_for(2, 1, stream), adapter=ScriptedAdapter({5: failed_result}))
    assert stream.getvalue().splitlines() == [
        "[1/6] short warmup 1/1 done",
        "[2/6] short rep 1/2 ok 0.250s TTFT 0.050s 100.0 tok/s",
        "[3/6] short rep 2/2 ok 0.250s TTFT 0.050s 100.0 tok/s",
        "[4/6] long warmup 1/1 done",
        "[5/6] long rep 1/2 failed 0.001s",
        "[6/6] long rep 2/2 ok 0.250s TTFT 0.050s 100.0 tok/s",
    ]


def test_it_chooses_a_rich_bar_on_a_terminal_and_plain_lines_otherwise():
    assert isinstance(progress_for(1, 0, FakeTerminal()), RichProgress)
    assert isinstance(progress_for(1, 0, io.StringIO()), PlainProgress)


def test_it_draws_the_case_repetition_and_failures_on_the_bar(tmp_path):
    screen = io.StringIO()
    console = Console(file=screen, force_terminal=True, width=120)
    sink = RichProgress(3, 0, console)
    pack = make_pack(tmp_path, ["short"], repetitions=3)
    run_pack(pack, options(tmp_path), sink, adapter=ScriptedAdapter({2: failed_result}))
    text = screen.getvalue()
    assert "3/3" in text and "1 failed" in text
    assert sink.progress.tasks[0].completed == 3


def test_the_bar_is_never_redrawn_while_a_request_is_on_the_wire():
    # A redraw holds the GIL for a millisecond or more; one that lands while
    # a token arrives stamps it late (docs/measurement.md, "Field conditions").
    import threading
    import time

    from benchpack.measurement.window import timed_window

    screen = io.StringIO()
    sink = RichProgress(1, 0, Console(file=screen, force_terminal=True, width=120))
    sink.REDRAW_INTERVAL_S = 0.01
    sink.started(3)
    try:
        assert sink.progress.live._refresh_thread is None  # rich's own 10 Hz redraw thread is off
        assert any(t.name == "benchpack-progress" for t in threading.enumerate())
        time.sleep(0.1)
        with timed_window():
            # Read inside the window: a redraw may land between a read before it and its opening (the
            # redraw runs every 10 ms here), which is allowed; once it is open, none may.
            drawn = len(screen.getvalue())
            time.sleep(0.15)
            assert len(screen.getvalue()) == drawn
        deadline = time.monotonic() + 5
        while len(screen.getvalue()) == drawn and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(screen.getvalue()) > drawn  # the elapsed time ticks again between requests
    finally:
        sink.finished()
    assert not any(t.name == "benchpack-progress" for t in threading.enumerate())


def test_the_bar_shows_live_ttft_and_decode_rate_and_the_requests_own_clock():
    screen = io.StringIO()
    console = Console(file=screen, force_terminal=True, width=120)
    sink = RichProgress(1, 0, console)
    sink.started(2)
    sink.execution_started("short", 1, False)
    # A non-streamed request in flight: the second line's clock runs although nothing finished.
    request = sink.progress.tasks[1]
    assert request.total is None and request.fields["detail"] == "in flight"
    assert "short rep 1/1" in request.description and request.elapsed is not None
    sink.execution_finished("short", 1, False, {"ok": True, "timing": {"wall_s": 0.3, "ttft_s": 0.051, "tpot_s": 0.0025}})
    assert "last: TTFT 0.051s 400.0 tok/s" in sink.progress.tasks[0].fields["detail"]
    assert sink.progress.tasks[0].fields["count"] == "1/2"
    sink.execution_started("short", 2, False)
    assert sink.progress.tasks[1].completed == 0  # the request clock restarts for every execution
    sink.finished()
    assert "last: TTFT 0.051s 400.0 tok/s" in screen.getvalue()


def test_a_plain_line_for_a_non_streamed_request_shows_its_overall_rate():
    from benchpack.run.progress import outcome_text

    row = {"ok": True, "timing": {"wall_s": 1.5, "ttft_s": None, "tpot_s": None, "total_tps": 85.3}}
    assert outcome_text(row) == "ok 1.500s 85.3 tok/s overall"


def test_a_non_streamed_requests_clock_ticks_after_a_second_in_flight():
    # The one redraw allowed inside a timed window: a non-streamed request
    # stamps nothing but the end of its body, and a person watching a long
    # one must see it is alive.
    import time

    from benchpack.measurement.window import timed_window

    screen = io.StringIO()
    sink = RichProgress(1, 0, Console(file=screen, force_terminal=True, width=120), live_clock=True)
    sink.REDRAW_INTERVAL_S, sink.LIVE_CLOCK_AFTER_S, sink.LIVE_CLOCK_INTERVAL_S = 0.01, 0.2, 0.05
    sink.started(1)
    try:
        sink.execution_started("slow", 1, False)
        with timed_window():
            drawn = len(screen.getvalue())
            time.sleep(0.1)
            assert len(screen.getvalue()) == drawn  # not before LIVE_CLOCK_AFTER_S
            deadline = time.monotonic() + 5
            while len(screen.getvalue()) == drawn and time.monotonic() < deadline:
                time.sleep(0.01)
            assert len(screen.getvalue()) > drawn
    finally:
        sink.finished()
