"""Progress reporting for a run: a rich bar on a terminal, plain lines otherwise.

The runner only talks to the `ProgressSink` protocol, so a Celery task can
record progress in the database from the same runner. Warmups count as
executions: they take time, and leaving them out would make the ETA lie.

What a person watching sees: the current case and repetition, the count
and ETA, the TTFT and decode rate of the last measured request as they come
in, and a second line with the time the request in flight has taken (a
non-streamed request says nothing until it ends; the clock shows it is
alive). The terminal redraws twice a second from rich's own thread: a
repaint is a fraction of a millisecond of CPU, and a slower rate keeps it
out of the way of the requests being timed.
"""

from __future__ import annotations

import sys
import time
from typing import IO, Protocol

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

REFRESH_PER_SECOND = 2


class ProgressSink(Protocol):
    def started(self, total_executions: int) -> None: ...
    def execution_started(self, case_id: str, repetition: int, warmup: bool) -> None: ...
    def execution_finished(self, case_id: str, repetition: int, warmup: bool, row: dict | None) -> None: ...
    def finished(self) -> None: ...


class NullProgress:
    def started(self, total_executions: int) -> None:
        pass

    def execution_started(self, case_id: str, repetition: int, warmup: bool) -> None:
        pass

    def execution_finished(self, case_id: str, repetition: int, warmup: bool, row: dict | None) -> None:
        pass

    def finished(self) -> None:
        pass


def execution_label(case_id: str, repetition: int, warmup: bool, repetitions: int, warmups: int) -> str:
    if warmup:
        return f"{case_id} warmup {repetition}/{warmups}"
    return f"{case_id} rep {repetition}/{repetitions}"


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

    def execution_started(self, case_id: str, repetition: int, warmup: bool) -> None:
        pass

    def execution_finished(self, case_id: str, repetition: int, warmup: bool, row: dict | None) -> None:
        self.done += 1
        label = execution_label(case_id, repetition, warmup, self.repetitions, self.warmups)
        print(f"[{self.done}/{self.total}] {label} {outcome_text(row)}", file=self.stream, flush=True)

    def finished(self) -> None:
        pass


def _clock(seconds: float) -> str:
    seconds = int(max(seconds, 0))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


class RichProgress:
    """A live bar (case/repetition, count, ETA, last TTFT and tok/s, failures)
    over a line with the elapsed time of the request in flight."""

    def __init__(self, repetitions: int, warmups: int, console: Console | None = None):
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
            refresh_per_second=REFRESH_PER_SECOND,
        )
        self.task = None
        self.request = None

    def started(self, total_executions: int) -> None:
        self.total, self.started_at = total_executions, time.monotonic()
        self.progress.start()
        self.task = self.progress.add_task("starting", total=total_executions, count=f"0/{total_executions}",
                                           detail="")
        # Indeterminate: its bar pulses and its clock is the request's own.
        self.request = self.progress.add_task("  request", total=None, count="", detail="in flight")

    def execution_started(self, case_id: str, repetition: int, warmup: bool) -> None:
        label = execution_label(case_id, repetition, warmup, self.repetitions, self.warmups)
        self.progress.update(self.task, description=label)
        self.progress.reset(self.request, total=None, description=f"  {label}", count="", detail="in flight")

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

    def execution_finished(self, case_id: str, repetition: int, warmup: bool, row: dict | None) -> None:
        self.done += 1
        if row is not None and not row.get("ok"):
            self.failed += 1
        elif row is not None:
            self.last = live_figures(row) or self.last
        self.progress.update(self.task, advance=1, count=f"{self.done}/{self.total}", detail=self._detail())
        self.progress.update(self.request, detail="done")

    def finished(self) -> None:
        if self.task is not None:
            self.progress.update(self.task, description="done", detail=self._detail())
        if self.request is not None:
            self.progress.remove_task(self.request)
            self.request = None
        self.progress.stop()


def progress_for(repetitions: int, warmups: int, stream: IO[str] | None = None) -> ProgressSink:
    """A rich bar when `stream` is a terminal, plain lines when it is a pipe or file."""
    stream = stream or sys.stdout
    if stream.isatty():
        return RichProgress(repetitions, warmups, Console(file=stream))
    return PlainProgress(repetitions, warmups, stream)
