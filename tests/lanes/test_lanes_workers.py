"""The lane's worker threads (benchpack.lanes.runs._Workers): how many requests are in flight, which threads
run a level's warm-up and its measured requests, and what an error or an interrupt does to a batch."""

from __future__ import annotations

import threading
import time

import pytest

from benchpack.lanes.runs import _parallel, _Workers


def _tracker():
    """Jobs that record which thread ran them and the most that were running at once."""
    lock = threading.Lock()
    state = {"now": 0, "most": 0, "threads": []}

    def job() -> None:
        with lock:
            state["now"] += 1
            state["most"] = max(state["most"], state["now"])
            state["threads"].append(threading.get_ident())
        time.sleep(0.005)
        with lock:
            state["now"] -= 1
    return state, job


def test_a_levels_warmup_and_measured_requests_run_on_the_same_threads_with_level_in_flight():
    before = threading.active_count()
    pool = _Workers(4)
    warm_state, warm_job = _tracker()
    pool.run([warm_job] * 4)
    assert warm_state["most"] == 4 and len(set(warm_state["threads"])) == 4  # one per worker: a connection each
    state, job = _tracker()
    began = []
    pool.run([job] * 10, begin=lambda: began.append(state["now"]))
    assert began == [0]  # begin() runs before the first job is taken
    assert len(state["threads"]) == 10 and state["most"] == 4
    assert set(state["threads"]) <= set(warm_state["threads"])  # no new thread for the measured requests
    assert threading.active_count() == before + 4
    pool.close()
    assert threading.active_count() == before


def test_a_failing_job_stops_the_batch_and_is_raised_in_the_callers_thread():
    ran = []

    def fail() -> None:
        raise ValueError("boom")

    jobs = [fail] + [lambda: ran.append(1)] * 50
    with pytest.raises(ValueError, match="boom"):
        _parallel(jobs, 1)  # one worker: the job after the failure is never taken
    assert ran == []


@pytest.mark.exclusive  # asserts it returns within 1 s
def test_close_after_an_interrupted_batch_takes_no_further_job_and_does_not_wait_for_a_busy_one():
    pool = _Workers(1)
    release = threading.Event()
    started = threading.Event()
    taken = []

    def busy() -> None:
        started.set()
        release.wait(5)

    runner = threading.Thread(target=pool.run, args=([busy] + [lambda: taken.append(1)] * 3,), daemon=True)
    runner.start()
    assert started.wait(5)
    t0 = time.perf_counter()
    pool.close()  # as run_level's finally does after a Ctrl-C: the request on the wire keeps its worker
    assert time.perf_counter() - t0 < 1
    release.set()
    runner.join(5)
    assert not runner.is_alive() and taken == []


def test_a_worker_asks_for_short_turns_once_for_its_life_not_per_request(monkeypatch):
    from benchpack.measurement import sched

    calls = []
    lock = threading.Lock()

    def set_attr(attr):
        with lock:
            calls.append(attr[5])
        return True

    monkeypatch.setattr(sched, "enabled", True)
    monkeypatch.setattr(sched._sys, "get", lambda: (56, 0, 0, 0, 0, 2_800_000, 0, 0, 0, 1024))  # SCHED_OTHER
    monkeypatch.setattr(sched._sys, "set", set_attr)

    def request() -> None:
        with sched.shortened() as short:  # what each timed request does (measurement.window)
            assert short

    workers = _Workers(2)
    try:
        workers.run([request] * 20)
    finally:
        workers.close()
    # Each of the two threads: one short slice when it started, the old slice back when it ended.
    assert sorted(calls) == [sched.SHORT_SLICE_NS] * 2 + [2_800_000] * 2


def test_a_levels_workers_and_only_they_reach_the_levels_stream_reader():
    # Both loops' workers bind the reader they are given (a closed loop's pool, an open loop's arrivals);
    # the thread that runs the level, and workers given none, read their own bodies.
    from benchpack.adapters import streamreader
    from benchpack.lanes.runs import _open_loop

    seen: list = []

    def job() -> None:
        seen.append(streamreader.active())

    reader = object()  # what the workers bind is passed, never looked up: any object stands for a reader
    pool = _Workers(3, reader)
    try:
        pool.run([job] * 6)
    finally:
        pool.close()
    _open_loop([job] * 4, [0.0, 0.001, 0.002, 0.003], lambda: None, {"start": time.perf_counter()}, reader)
    assert seen == [reader] * 10
    _parallel([job] * 2, 2)
    assert seen[10:] == [None, None]
    assert streamreader.active() is None
