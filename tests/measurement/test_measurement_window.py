import gc
import threading
import time

import pytest

from benchpack.measurement import sched
from benchpack.measurement.window import background_work, timed_window, window_open
from tests.environment import needs


def test_the_collector_is_paused_from_the_first_window_opened_to_the_last_closed():
    assert gc.isenabled()
    inside, release = threading.Event(), threading.Event()

    def other_request():
        with timed_window():
            inside.set()
            release.wait(5)

    thread = threading.Thread(target=other_request)
    with timed_window():
        assert not gc.isenabled() and window_open()
        thread.start()
        assert inside.wait(5)
    assert not gc.isenabled() and window_open()  # the other thread's request is still on the wire
    release.set()
    thread.join()
    assert gc.isenabled() and not window_open()


def test_a_caller_that_turned_the_collector_off_keeps_it_off():
    gc.disable()
    try:
        with timed_window():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_background_work_waits_for_open_windows_and_windows_wait_for_it():
    log = []
    started = threading.Event()

    def redraw():
        started.set()
        with background_work():
            log.append("redraw")
            time.sleep(0.05)
            log.append("redraw done")

    with timed_window():
        thread = threading.Thread(target=redraw)
        thread.start()
        assert started.wait(5)
        time.sleep(0.05)
        assert log == []  # not while a request is on the wire
        log.append("request done")
    while "redraw" not in log:
        time.sleep(0.001)
    with timed_window():  # opens only after the redraw in progress finished
        log.append("next request")
    thread.join()
    assert log == ["request done", "redraw", "redraw done", "next request"]


def test_an_exception_inside_the_window_still_closes_it():
    with pytest.raises(RuntimeError):
        with timed_window():
            raise RuntimeError("boom")
    assert gc.isenabled() and not window_open()
    with background_work():  # would wait forever if the window had stayed open
        pass


def _supports_custom_slices() -> bool:
    before = sched.current_slice_ns()
    if before is None or before <= sched.SHORT_SLICE_NS:
        return False
    with sched.shortened() as changed:
        return changed


@needs(_supports_custom_slices, "kernel without EEVDF custom slices (Linux < 6.12) or not Linux")
def test_the_timing_thread_gets_short_turns_only_inside_the_window():
    before = sched.current_slice_ns()
    seen_elsewhere = []
    look = threading.Event()

    def other_thread():
        look.wait(5)
        seen_elsewhere.append(sched.current_slice_ns())

    other = threading.Thread(target=other_thread)
    other.start()
    with timed_window():
        assert sched.current_slice_ns() == sched.SHORT_SLICE_NS
        look.set()
        other.join()
    assert sched.current_slice_ns() == before
    assert seen_elsewhere == [before]  # the process's other threads keep theirs


def test_short_turns_are_skipped_where_the_kernel_cannot_give_them(monkeypatch):
    monkeypatch.setattr(sched._sys, "libc", None)
    with sched.shortened() as changed:
        assert changed is False
    with timed_window():
        pass


def test_short_turns_leave_a_real_time_thread_alone(monkeypatch):
    calls = []
    monkeypatch.setattr(sched._sys, "get", lambda: (56, 1, 0, 0, 10, 0, 0, 0, 0, 1024))  # SCHED_FIFO
    monkeypatch.setattr(sched._sys, "set", lambda attr: calls.append(attr) or True)
    with sched.shortened() as changed:
        assert changed is False
    assert calls == []


def test_short_turns_keep_nice_and_the_reset_on_fork_flag_and_restore_the_slice(monkeypatch):
    calls = []
    monkeypatch.setattr(sched._sys, "get", lambda: (56, 0, 0x01 | 0x20, 5, 0, 2_800_000, 0, 0, 0, 1024))
    monkeypatch.setattr(sched._sys, "set", lambda attr: calls.append(attr) or True)
    with sched.shortened() as changed:
        assert changed
    assert calls == [(56, 0, 0x01, 5, 0, sched.SHORT_SLICE_NS, 0, 0, 0, 1024),
                     (56, 0, 0x01, 5, 0, 2_800_000, 0, 0, 0, 1024)]


def _fake_kernel(monkeypatch, slice_ns: int = 2_800_000) -> list:
    """sched's system calls replaced by a per-thread slice kept here; returns the log of set() calls."""
    slices: dict[int, int] = {}
    calls = []

    def get():
        return (56, 0, 0, 0, 0, slices.get(threading.get_ident(), slice_ns), 0, 0, 0, 1024)

    def set_(attr):
        calls.append((threading.get_ident(), attr[5]))
        slices[threading.get_ident()] = attr[5]
        return True

    monkeypatch.setattr(sched._sys, "get", get)
    monkeypatch.setattr(sched._sys, "set", set_)
    return calls


def test_a_block_inside_a_block_of_the_same_thread_makes_no_system_call(monkeypatch):
    calls = _fake_kernel(monkeypatch)
    me = threading.get_ident()
    with sched.shortened() as outer:
        assert outer and calls == [(me, sched.SHORT_SLICE_NS)]
        for _ in range(3):
            with timed_window():
                pass
            with sched.shortened() as inner:
                assert inner  # the turns are short: say so, as the enclosing block did
        assert calls == [(me, sched.SHORT_SLICE_NS)]
    assert calls == [(me, sched.SHORT_SLICE_NS), (me, 2_800_000)]  # restored once, at the outer end
    with sched.shortened():  # and a later block asks again
        pass
    assert len(calls) == 4


def test_a_block_held_by_one_thread_does_not_count_for_another(monkeypatch):
    calls = _fake_kernel(monkeypatch)
    seen = []

    def other():
        with sched.shortened() as changed:
            seen.append(changed)

    with sched.shortened():
        thread = threading.Thread(target=other)
        thread.start()
        thread.join()
    assert seen == [True]
    assert [slice_ns for ident, slice_ns in calls if ident == thread.ident] == [sched.SHORT_SLICE_NS, 2_800_000]


def test_an_inner_block_asking_for_a_shorter_slice_than_the_enclosing_one_still_asks(monkeypatch):
    calls = _fake_kernel(monkeypatch)
    with sched.shortened(1_000_000):
        with sched.shortened(sched.SHORT_SLICE_NS):
            pass
    assert [slice_ns for _, slice_ns in calls] == [1_000_000, sched.SHORT_SLICE_NS, 1_000_000, 2_800_000]


@needs(_supports_custom_slices, "kernel without EEVDF custom slices (Linux < 6.12) or not Linux")
def test_nested_blocks_keep_the_short_slice_until_the_outer_one_ends():
    before = sched.current_slice_ns()
    with sched.shortened():
        with timed_window():
            assert sched.current_slice_ns() == sched.SHORT_SLICE_NS
        assert sched.current_slice_ns() == sched.SHORT_SLICE_NS  # the window did not restore it
    assert sched.current_slice_ns() == before
