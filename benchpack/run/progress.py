"""Progress reporting for a run: a rich bar on a terminal, plain lines otherwise.

The runner only talks to the `ProgressSink` protocol, so a Celery task can
record progress in the database from the same runner. Warmups count as
executions: they take time, and leaving them out would make the ETA lie.

What a person watching sees: the current case and repetition, the count
and ETA, the TTFT and decode rate of the last measured request as they come
in, and a second line with the time the request in flight has taken (a
non-streamed request says nothing until it ends; the clock shows it is
alive).

Rich's own auto-refresh redraws from a thread ten times a second, and a
redraw holds the GIL for a millisecond or more: a token arriving during one
was stamped late, and the redraws' CPU landed in every request
(docs/measurement.md, "Field conditions"). So the display is redrawn when an
execution starts and ends, and by a thread of ours every REDRAW_INTERVAL_S
only while no request is on the wire (`measurement.window.background_work`).
The one exception is the clock of a non-streamed request (`live_clock`):
nothing is stamped while its body is awaited but its end, so after
LIVE_CLOCK_AFTER_S in flight it is redrawn once a second; the end of the
body can then be read up to one redraw late, about a millisecond, in about
one request in a thousand.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import IO, TYPE_CHECKING, Protocol

from benchpack.measurement.window import background_work, window_open

if TYPE_CHECKING:  # rich is imported only when a bar is drawn: a run to a pipe or file never pays for it
    from rich.console import Console


class ProgressSink(Protocol):
    """`lane` names a lane's step ("depth 8192", "concurrency 4", "rate 2/s") and `of` how many executions
    of that kind the step has (a concurrency level's requests, its warmups); both None for the base cases,
    whose totals are the pack's repetitions and warmups."""

    def started(self, total_executions: int) -> None: ...
    def execution_started(self, case_id: str, repetition: int, warmup: bool, *, lane: str | None = None,
                          of: int | None = None) -> None: ...
    def execution_finished(self, case_id: str, repetition: int, warmup: bool, row: dict | None, *,
                           lane: str | None = None, of: int | None = None) -> None: ...
    def finished(self) -> None: ...


class NullProgress:
    def started(self, total_executions: int) -> None:
        pass

    def execution_started(self, case_id: str, repetition: int, warmup: bool, **lane) -> None:
        pass

    def execution_finished(self, case_id: str, repetition: int, warmup: bool, row: dict | None, **lane) -> None:
        pass

    def finished(self) -> None:
        pass


def execution_label(case_id: str, repetition: int, warmup: bool, repetitions: int, warmups: int, *,
                    lane: str | None = None, of: int | None = None) -> str:
    """`short rep 2/3`, `short warmup 1/1`; in a lane `short · depth 8192 rep 2/3`,
    `short · concurrency 4 request 16/16`: the count is always out of that step's own total."""
    where = f"{case_id} · {lane}" if lane else case_id
    if warmup:
        return f"{where} warmup {repetition}/{of or warmups}"
    if of is not None:  # a concurrency or rate level: its requests, not repetitions of a case
        return f"{where} request {repetition}/{of}"
    return f"{where} rep {repetition}/{repetitions}"


def _number(value) -> float | None:
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def live_figures(row: dict | None) -> str:
    """`TTFT 0.051s 412.3 tok/s` for a measured row: TTFT and 1/tpot_s (or total tok/s when not streamed)."""
    timing = (row or {}).get("timing") or {}
    parts = []
    ttft, tpot, total = _number(timing.get("ttft_s")), _number(timing.get("tpot_s")), _number(timing.get("total_tps"))
    if ttft is not None:
        parts.append(f"TTFT {ttft:.3f}s")
    if tpot:
        parts.append(f"{1 / tpot:.1f} tok/s")
    elif total is not None:
        parts.append(f"{total:.1f} tok/s overall")
    return " ".join(parts)


def outcome_text(row: dict | None) -> str:
    """`ok 0.284s TTFT 0.051s 412.3 tok/s` / `failed 0.012s`; warmups (no row) just say `done`."""
    if row is None:
        return "done"
    wall = (row.get("timing") or {}).get("wall_s")
    status = "ok" if row.get("ok") else "failed"
    text = f"{status} {wall:.3f}s" if isinstance(wall, (int, float)) else status
    figures = live_figures(row) if row.get("ok") else ""
    return f"{text} {figures}".rstrip()


class PlainProgress:
    """One line per finished execution: `[3/12] short rep 2/3 ok 0.284s TTFT 0.051s 412.3 tok/s`."""

    def __init__(self, repetitions: int, warmups: int, stream: IO[str] | None = None):
        self.repetitions, self.warmups = repetitions, warmups
        self.stream = stream or sys.stdout
        self.total = 0
        self.done = 0

    def started(self, total_executions: int) -> None:
        self.total, self.done = total_executions, 0

    def execution_started(self, case_id: str, repetition: int, warmup: bool, **lane) -> None:
        pass

    def execution_finished(self, case_id: str, repetition: int, warmup: bool, row: dict | None, **lane) -> None:
        self.done += 1
        label = execution_label(case_id, repetition, warmup, self.repetitions, self.warmups, **lane)
        print(f"[{self.done}/{self.total}] {label} {outcome_text(row)}", file=self.stream, flush=True)

    def finished(self) -> None:
        pass


def _clock(seconds: float) -> str:
    seconds = int(max(seconds, 0))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


class RichProgress:
    """A live bar (case/repetition, count, ETA, last TTFT and tok/s, failures)
    over a line with the elapsed time of the request in flight."""

    REDRAW_INTERVAL_S = 0.5
    LIVE_CLOCK_AFTER_S = 1.0
    LIVE_CLOCK_INTERVAL_S = 1.0

    def __init__(self, repetitions: int, warmups: int, console: Console | None = None, live_clock: bool = False):
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        self.repetitions, self.warmups = repetitions, warmups
        self.failed = 0
        self.last = ""
        self.started_at = 0.0
        self.done = 0
        self.total = 0
        self.progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            TextColumn("{task.fields[count]}"),
            TimeElapsedColumn(),
            TextColumn("{task.fields[detail]}"),
            console=console,
            transient=False,
            auto_refresh=False,
        )
        self.task = None
        self.request = None
        self.live_clock = live_clock
        self.request_started_at = 0.0
        self._stop = threading.Event()
        self._redrawer: threading.Thread | None = None

    def started(self, total_executions: int) -> None:
        self.total, self.started_at = total_executions, time.monotonic()
        self.progress.start()
        self.task = self.progress.add_task("starting", total=total_executions, count=f"0/{total_executions}",
                                           detail="")
        # Indeterminate: its bar pulses and its clock is the request's own.
        self.request = self.progress.add_task("  request", total=None, count="", detail="in flight")
        self.progress.refresh()
        self._redrawer = threading.Thread(target=self._redraw, name="benchpack-progress", daemon=True)
        self._redrawer.start()

    def _redraw(self) -> None:
        last = time.monotonic()
        while not self._stop.wait(self.REDRAW_INTERVAL_S):
            if window_open():
                now = time.monotonic()
                if (self.live_clock and now - self.request_started_at >= self.LIVE_CLOCK_AFTER_S
                        and now - last >= self.LIVE_CLOCK_INTERVAL_S):
                    self.progress.refresh()
                    last = now
                continue
            with background_work():
                if not self._stop.is_set():
                    self.progress.refresh()
                    last = time.monotonic()

    def execution_started(self, case_id: str, repetition: int, warmup: bool, **lane) -> None:
        label = execution_label(case_id, repetition, warmup, self.repetitions, self.warmups, **lane)
        self.progress.update(self.task, description=label)
        self.request_started_at = time.monotonic()
        self.progress.reset(self.request, total=None, description=f"  {label}", count="", detail="in flight")
        self.progress.refresh()

    def _detail(self) -> str:
        parts = []
        if 0 < self.done < self.total:
            elapsed = time.monotonic() - self.started_at
            parts.append(f"eta {_clock(elapsed / self.done * (self.total - self.done))}")
        if self.last:
            parts.append(f"last: {self.last}")
        if self.failed:
            parts.append(f"[red]{self.failed} failed[/red]")
        return " · ".join(parts)

    def execution_finished(self, case_id: str, repetition: int, warmup: bool, row: dict | None, **lane) -> None:
        self.done += 1
        if row is not None and not row.get("ok"):
            self.failed += 1
        elif row is not None:
            self.last = live_figures(row) or self.last
        self.progress.update(self.task, advance=1, count=f"{self.done}/{self.total}", detail=self._detail())
        self.progress.update(self.request, detail="done")
        self.progress.refresh()

    def finished(self) -> None:
        self._stop.set()
        if self._redrawer is not None:
            self._redrawer.join()
        if self.task is not None:
            self.progress.update(self.task, description="done", detail=self._detail())
        if self.request is not None:
            self.progress.remove_task(self.request)
            self.request = None
        self.progress.stop()


def progress_for(repetitions: int, warmups: int, stream: IO[str] | None = None,
                 live_clock: bool = False) -> ProgressSink:
    """A rich bar when `stream` is a terminal, plain lines when it is a pipe or file.
    `live_clock`: the requests are not streamed (see RichProgress)."""
    stream = stream or sys.stdout
    if stream.isatty():
        from rich.console import Console

        return RichProgress(repetitions, warmups, Console(file=stream), live_clock=live_clock)
    return PlainProgress(repetitions, warmups, stream)
