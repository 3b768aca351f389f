"""Running a pack's lanes inside `benchpack run` (runner.py calls in here).

The runner executes the base cases as before; then, for each declared lane
the run includes (`--lanes`), the lane's cases again:

* depth: per depth, per case, `warmup` + `repetitions` executions in order,
  the filler before the prompt (`benchpack.packs.lane_filler`); rows get
  `depth_tokens`. One request at a time, so each row has its own energy.
* concurrency: per level N, `requests` requests with N in flight at once
  (a closed loop: N workers, each sends its next request as soon as its
  previous one ends, as `vllm bench serve --max-concurrency` and
  `llama-server -np N` users run it); rows get `concurrency`.
* rate: per rate λ, `requests` requests sent at Poisson arrival times
  (exponential gaps, mean 1/λ, seeded by the lane's seed and the rate; an
  open loop: a request is sent at its time whatever is still in flight);
  rows get `arrival_rate`.

Concurrent requests go through the same adapter call as a single one, each
in its own thread with its own timed window (benchpack.measurement.window
pauses the collector from the first window opened to the last closed; the
adapters' transport keeps a connection per request in flight). A
concurrency level's N worker threads run its warm-up (one request each,
which opens each worker's connection) and then its measured requests. Progress is told about
a level's requests after the level, never while a stream is on the wire,
and a level's rows are built and written (raw files, run.jsonl, fsync)
right after the level, for the same reason: a crash inside a level loses
that level's rows, never an earlier level's.
Overlapping requests share the machine, so their energy is measured once
per level (run-metadata.json `lanes.levels`), not per row.

Rows of concurrent levels record `load`: `sent_offset_s` and `done_offset_s`
(request sent and done, seconds after the level started) and, in the rate
lane, `scheduled_offset_s` (the Poisson arrival time it was due at).
"""

from __future__ import annotations

import queue
import random
import threading
import time
from typing import TYPE_CHECKING, Any, Callable

# msgspec.Struct, not @dataclass: a dataclass compiles its generated methods from source text in every
# process (~0.4 ms a class); a Struct is built in C (docs/measurement.md, "Issue 34 item 2: stop 43").
import msgspec

from benchpack.adapters import streamreader
from benchpack.errors import Problem
from benchpack.lanes import aggregate
from benchpack.packs.lane_filler import filler_text
from benchpack.packs.lane_spec import LANE_NAMES, lane_cases
from benchpack.measurement import sched

if TYPE_CHECKING:
    from benchpack.packs.loader import Case, Pack

perf_counter = time.perf_counter
# The rate lane's most requests in flight at once (an open loop at a rate the server cannot keep up with
# would otherwise start a thread per request); a request that finds none free is sent late, and says so.
MAX_OPEN_LOOP_WORKERS = 64


def check_lane_options(lanes: tuple[str, ...] | None, max_depth: int | None) -> list[Problem]:
    problems = []
    if lanes is not None:
        unknown = [name for name in lanes if name not in LANE_NAMES]
        if unknown or not lanes:
            problems.append(Problem("benchpack run", "--lanes",
                                    f"must be a comma-separated list of {', '.join(LANE_NAMES)}, got {','.join(lanes)!r}"))
    if max_depth is not None and (isinstance(max_depth, bool) or not isinstance(max_depth, int) or max_depth < 0):
        problems.append(Problem("benchpack run", "--max-depth", f"must be an integer >= 0, got {max_depth!r}"))
    return problems


def runs_base(lanes: tuple[str, ...] | None) -> bool:
    return lanes is None or "base" in lanes


def _runs(lanes: tuple[str, ...] | None, name: str) -> bool:
    return lanes is None or name in lanes


class LanePlan(msgspec.Struct):
    depths: list[int] = msgspec.field(default_factory=list)
    skipped: list[str] = msgspec.field(default_factory=list)  # warnings: depths left out, and why
    executions: int = 0
    rows: int = 0


def _context_size(server: Any) -> int | None:
    config = getattr(server, "config", None) or {}
    value = config.get("context_size")
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _lane_case_ids(pack: Pack) -> list[str]:
    return [c.id for c in pack.cases if c.kind in ("chat", "completion")]


def lane_plan(pack: Pack, options: Any, server: Any = None) -> LanePlan:
    """What the lanes of this run will execute: depths kept, executions and rows planned."""
    plan = LanePlan()
    lanes, defaults = pack.lanes, pack.defaults
    selected = getattr(options, "lanes", None)
    if lanes.depth is not None and _runs(selected, "depth"):
        context = _context_size(server)
        max_depth = getattr(options, "max_depth", None)
        for depth in lanes.depth.depths:
            if context is not None and depth + (defaults.max_tokens or 0) >= context:
                plan.skipped.append(f"depth {depth} skipped: with max_tokens {defaults.max_tokens} it does not fit "
                                    f"the server's context of {context} tokens per slot")
            elif max_depth is not None and depth > max_depth:
                plan.skipped.append(f"depth {depth} skipped: above --max-depth {max_depth}")
            else:
                plan.depths.append(depth)
        cases = len(lane_cases(lanes.depth.cases, _lane_case_ids(pack)))
        plan.executions += len(plan.depths) * cases * (defaults.warmup + defaults.repetitions)
        plan.rows += len(plan.depths) * cases * defaults.repetitions
    if lanes.concurrency is not None and _runs(selected, "concurrency"):
        warm = sum(lanes.concurrency.levels) if defaults.warmup else 0
        plan.executions += warm + len(lanes.concurrency.levels) * lanes.concurrency.requests
        plan.rows += len(lanes.concurrency.levels) * lanes.concurrency.requests
    if lanes.rate is not None and _runs(selected, "rate"):
        warm = len(lanes.rate.rates) if defaults.warmup else 0  # one unrecorded request per rate
        plan.executions += warm + len(lanes.rate.rates) * lanes.rate.requests
        plan.rows += len(lanes.rate.rates) * lanes.rate.requests
    return plan


def _cases(run: Any, declared: tuple[str, ...]) -> list[Case]:
    ids = lane_cases(declared, _lane_case_ids(run.pack))
    by_id = {case.id: case for case in run.pack.cases}
    return [by_id[case_id] for case_id in ids]


def run_lanes(run: Any) -> None:
    """Every lane this run includes, in order: depth, concurrency, rate."""
    lanes, selected = run.pack.lanes, run.options.lanes
    plan = lane_plan(run.pack, run.options, run.server)
    if lanes.depth is not None and _runs(selected, "depth"):
        run_depth(run, plan.depths)
    if lanes.concurrency is not None and _runs(selected, "concurrency"):
        for level in lanes.concurrency.levels:
            run_level(run, "concurrency", level, _cases(run, lanes.concurrency.cases), lanes.concurrency.requests,
                      arrivals=None)
    if lanes.rate is not None and _runs(selected, "rate"):
        for rate in lanes.rate.rates:
            run_level(run, "rate", rate, _cases(run, lanes.rate.cases), lanes.rate.requests,
                      arrivals=poisson_offsets(rate, lanes.rate.requests, lanes.rate.seed))


# --- depth -------------------------------------------------------------------

def run_depth(run: Any, depths: list[int]) -> None:
    lane, defaults = run.pack.lanes.depth, run.pack.defaults
    for depth in depths:
        prefix = filler_text(lane.seed, depth)
        step = f"depth {depth}"  # progress names the lane (`short · depth 8192 rep 2/3`)
        for case in _cases(run, lane.cases):
            for number in range(1, defaults.warmup + 1):
                run.progress.execution_started(case.id, number, True, lane=step)
                run.warmup(case, number, prefix=prefix, stem=f"{case.id}.depth-{depth}.warmup-{number:03d}", quiet=True)
                run.progress.execution_finished(case.id, number, True, None, lane=step)
            for repetition in range(1, defaults.repetitions + 1):
                run.progress.execution_started(case.id, repetition, False, lane=step)
                rows_before = len(run.rows)
                run.measured(case, repetition, prefix=prefix, stem=f"{case.id}.depth-{depth}.rep-{repetition:03d}",
                             lane={"depth_tokens": depth}, quiet=True)
                row = run.rows[-1] if len(run.rows) > rows_before else None
                run.progress.execution_finished(case.id, repetition, False, row, lane=step)


# --- concurrency and rate ---------------------------------------------------

def poisson_offsets(rate: float, requests: int, seed: int) -> list[float]:
    """Arrival times (s after the level starts) of `requests` Poisson arrivals at `rate`/s; the first at 0."""
    rng = random.Random(f"benchpack-arrivals:{seed}:{rate!r}")
    offsets, now = [], 0.0
    for _ in range(requests):
        offsets.append(now)
        now += rng.expovariate(rate)
    return offsets


def _step(kind: str, level: float) -> str:
    """How progress names a level: `concurrency 4`, `rate 2/s`."""
    return f"concurrency {int(level)}" if kind == "concurrency" else f"rate {level:g}/s"


def _level_tag(kind: str, level: float) -> str:
    return f"c{level}" if kind == "concurrency" else f"r{level:g}"


def run_level(run: Any, kind: str, level: float, cases: list[Case], requests: int,
              arrivals: list[float] | None) -> None:
    """One concurrency level (closed loop, `level` workers) or one arrival rate (open loop, `arrivals`)."""
    tag = _level_tag(kind, level)
    step = _step(kind, level)
    # The level's response bodies are read by one thread (adapters/streamreader.py): a token wave wakes
    # one reader, not one worker per stream. The workers send, read heads and parse. The reader is this
    # level's: only the level's own workers bind it (another run in this process, or this run's base lane,
    # never sees it), and it closes after them.
    with streamreader.shared_reads() as reader:
        # A concurrency level's warm-up and its measured requests run on the same `level` threads (one set of
        # threads per level, not one per phase): the warm-up opens each worker's connection, which the
        # transport's pool then hands to the measured requests.
        pool = _Workers(min(int(level), requests), reader) if arrivals is None else None
        try:
            _run_level(run, kind, level, cases, requests, arrivals, tag, step, pool, reader)
        finally:
            if pool is not None:
                pool.close()


def _run_level(run: Any, kind: str, level: float, cases: list[Case], requests: int,
               arrivals: list[float] | None, tag: str, step: str, pool: _Workers | None,
               reader: streamreader.SharedReader | None = None) -> None:
    lane_field = {"concurrency": int(level)} if kind == "concurrency" else {"arrival_rate": float(level)}
    if run.pack.defaults.warmup:
        # Unrecorded: opens the connections the level needs and warms the server's slots.
        # Progress (a terminal redraw, a runner host's database write) is told from this thread afterwards.
        warm = int(level) if kind == "concurrency" else 1
        warm_jobs = [lambda i=i: run.warmup(cases[i % len(cases)], i + 1, quiet=True,
                                            stem=f"{cases[i % len(cases)].id}.{tag}.warmup-{i + 1:03d}")
                     for i in range(warm)]
        if pool is not None:
            pool.run(warm_jobs)
        else:
            _parallel(warm_jobs, warm, reader=reader)
        for i in range(warm):
            run.progress.execution_finished(cases[i % len(cases)].id, i + 1, True, None, lane=step, of=warm)
    recorders: list[Callable[[], None]] = []
    clock: dict[str, Any] = {"start": perf_counter(), "energy": None}

    def begin() -> None:
        """The level starts once its workers exist: offsets and energy are taken from here."""
        clock["energy"] = run.energy.start() if run.energy is not None else None
        clock["start"] = perf_counter()

    def job(index: int, scheduled: float | None) -> Callable[[], None]:
        case = cases[index % len(cases)]

        def execute() -> None:
            run.measured(case, index + 1, stem=f"{case.id}.{tag}.req-{index + 1:03d}", energy=False, quiet=True,
                         lane={**lane_field, "load": {"scheduled_offset_s": scheduled}}, level_start=clock["start"],
                         defer=recorders)
        return execute

    try:
        if pool is not None:
            pool.run([job(i, None) for i in range(requests)], begin)
        else:
            _open_loop([job(i, at) for i, at in enumerate(arrivals)], arrivals, begin, clock, reader)
    finally:
        duration = perf_counter() - clock["start"]
        window = clock["energy"]
        energy = window.stop() if window is not None else None
        # The rows are built and written now that no stream is on the wire, in the order requests ended
        # (also after an interrupt: the requests that finished keep their rows).
        for record in recorders:
            record()
    run.level_records.append({"lane": kind, "level": level, "requests": requests,
                              "duration_s": round(duration, 6), "energy": energy})
    key = "concurrency" if kind == "concurrency" else "arrival_rate"
    rows = [row for row in run.rows if row.get(key) == level]
    level_rows = rows[-requests:]
    for number, row in enumerate(level_rows, 1):  # progress hears about the level now that no stream is on the wire
        run.progress.execution_finished(row["case"], number, False, row, lane=step, of=len(level_rows))


class _Workers:
    """`count` threads that run batches of jobs (`run`), each worker taking the next job when its last one ends.

    The threads exist before a batch starts (no thread start inside a
    level) and wait between batches, so a level's warm-up and its measured
    requests share them. A job that raises stops the batch: the workers
    take no further job, and `run` re-raises the first error in the
    caller's thread once every worker has finished the job it had.
    `reader`: the level's shared stream reader, which each worker binds
    for itself (streamreader.serving): the bodies its jobs read go there.
    """

    def __init__(self, count: int, reader: streamreader.SharedReader | None = None) -> None:
        self._reader = reader
        self._cond = threading.Condition(threading.Lock())
        self._pending: list[Callable[[], None]] = []
        self._errors: list[BaseException] = []
        self._batch = 0  # bumped by `run`: a worker that has not seen this batch yet joins it
        self._idle = 0  # workers done with the current batch
        self._closed = False
        self._threads = [threading.Thread(target=self._work, name=f"benchpack-lane-{i}", daemon=True)
                         for i in range(max(count, 1))]
        for thread in self._threads:
            thread.start()

    def _work(self) -> None:
        # Short scheduler turns for the worker's whole life, asked once: each request's own
        # sched.shortened() then nests inside it without a system call (three per request otherwise).
        with streamreader.serving(self._reader), sched.shortened():
            self._serve()

    def _serve(self) -> None:
        seen = 0
        cond = self._cond
        while True:
            with cond:
                while self._batch == seen and not self._closed:
                    cond.wait()
                if self._closed:
                    return
                seen = self._batch
            while True:
                with cond:
                    if not self._pending or self._errors or self._closed:
                        break
                    job = self._pending.pop()
                try:
                    job()
                except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
                    with cond:
                        self._errors.append(exc)
                    break
            with cond:
                self._idle += 1
                if self._idle == len(self._threads):
                    cond.notify_all()

    def run(self, jobs: list[Callable[[], None]], begin: Callable[[], None] = lambda: None) -> None:
        """Run `jobs` on the workers and return when all are done; `begin()` runs just before the first is taken."""
        cond = self._cond
        with cond:
            self._pending = list(reversed(jobs))
            self._errors = []
            self._idle = 0
        begin()
        with cond:
            self._batch += 1
            cond.notify_all()  # every worker exists and waits: the batch starts at once
            while self._idle < len(self._threads):
                cond.wait()
            errors = self._errors
        if errors:
            raise errors[0]

    def close(self) -> None:
        """Stop the workers: idle ones at once, busy ones after their current job (none is taken after this).

        Waits for the threads only when none is inside a job: after an
        interrupt a request may still be on the wire, and its worker (a
        daemon) ends by itself once that request does."""
        with self._cond:
            self._closed = True
            self._pending = []
            self._cond.notify_all()
            settled = self._batch == 0 or self._idle == len(self._threads)
        if settled:
            for thread in self._threads:
                thread.join()


def _parallel(jobs: list[Callable[[], None]], workers: int, begin: Callable[[], None] = lambda: None,
              reader: streamreader.SharedReader | None = None) -> None:
    """Run `jobs` with `workers` in flight at once, each worker taking the next job when its last one ends
    (their bodies read by `reader` when one is given)."""
    pool = _Workers(min(workers, len(jobs)), reader)
    try:
        pool.run(jobs, begin)
    finally:
        pool.close()


def _open_loop(jobs: list[Callable[[], None]], arrivals: list[float], begin: Callable[[], None],
               clock: dict, reader: streamreader.SharedReader | None = None) -> None:
    """Hand job i to a waiting worker at `clock["start"] + arrivals[i]` (`begin()` sets the start).

    The workers (at most MAX_OPEN_LOOP_WORKERS, so that many in flight at
    most) exist before the level starts: starting a thread at each arrival
    would make the dispatcher wait for the new thread to be scheduled, and
    on a busy machine that made sends late by tens of milliseconds. The
    dispatcher asks for short scheduler turns (`sched.shortened`) so it
    wakes on time; each row records when it was due and when it was sent.
    """
    work: queue.SimpleQueue = queue.SimpleQueue()
    errors: list[BaseException] = []
    go = threading.Event()

    def worker() -> None:
        go.wait()
        # Woken by the dispatcher: send on time on a busy machine too; the bodies go to the level's reader.
        with streamreader.serving(reader), sched.shortened():
            while (job := work.get()) is not None:
                try:
                    job()
                except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
                    errors.append(exc)

    threads = [threading.Thread(target=worker, name=f"benchpack-arrival-{i}", daemon=True)
               for i in range(min(len(jobs), MAX_OPEN_LOOP_WORKERS))]
    for thread in threads:
        thread.start()
    begin()
    start = clock["start"]
    go.set()
    with sched.shortened():
        for job, at in zip(jobs, arrivals):
            delay = start + at - perf_counter()
            if delay > 0:
                time.sleep(delay)
            if errors:
                break
            work.put(job)
    for _ in threads:
        work.put(None)
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]


def summary_sections(pack: Pack, rows: list[dict], levels: list[dict] | None = None) -> list[str]:
    """summary.md sections for the lanes: rates per depth, and one line per concurrency level / rate."""
    return aggregate.markdown_sections(rows, pack.lanes.slo, levels)
