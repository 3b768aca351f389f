"""Progress reporting for a run: a rich bar on a terminal, plain lines otherwise.

The runner only talks to the `ProgressSink` protocol, so a Celery task can
record progress in the database from the same runner. Warmups count as
executions: they take time, and leaving them out would make the ETA lie.
"""

from __future__ import annotations

import sys
import threading
from typing import IO, Protocol

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from benchpack.measurement.window import background_work


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


def outcome_text(row: dict | None) -> str:
    """`ok 0.284s` / `failed 0.012s`; warmups (no row) just say `done`."""
    if row is None:
        return "done"
    wall = (row.get("timing") or {}).get("wall_s")
    status = "ok" if row.get("ok") else "failed"
    return f"{status} {wall:.3f}s" if isinstance(wall, (int, float)) else status


class PlainProgress:
    """One line per finished execution: `[3/12] short rep 2/3 ok 0.284s`."""

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


class RichProgress:
    """A live bar with the current case/repetition, a count and an ETA.

    Rich's own auto-refresh redraws from a thread ten times a second, and a
    redraw holds the GIL for a millisecond or more: a token arriving during
    one was stamped late, and the redraws' CPU landed in every request
    (docs/measurement.md, "Field conditions"). So the bar is redrawn when an
    execution starts and ends, and by a thread of ours every
    REDRAW_INTERVAL_S only while no request is on the wire
    (`measurement.window.background_work`).
    """

    REDRAW_INTERVAL_S = 0.5

    def __init__(self, repetitions: int, warmups: int, console: Console | None = None):
        self.repetitions, self.warmups = repetitions, warmups
        self.failed = 0
        self.progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[failed]}"),
            TimeElapsedColumn(),
            TextColumn("eta"),
            TimeRemainingColumn(),
            console=console,
            transient=False,
            auto_refresh=False,
        )
        self.task = None
        self._stop = threading.Event()
        self._redrawer: threading.Thread | None = None

    def started(self, total_executions: int) -> None:
        self.progress.start()
        self.task = self.progress.add_task("starting", total=total_executions, failed="")
        self.progress.refresh()
        self._redrawer = threading.Thread(target=self._redraw, name="benchpack-progress", daemon=True)
        self._redrawer.start()

    def _redraw(self) -> None:
        while not self._stop.wait(self.REDRAW_INTERVAL_S):
            with background_work():
                if not self._stop.is_set():
                    self.progress.refresh()

    def execution_started(self, case_id: str, repetition: int, warmup: bool) -> None:
        label = execution_label(case_id, repetition, warmup, self.repetitions, self.warmups)
        self.progress.update(self.task, description=label, refresh=True)

    def execution_finished(self, case_id: str, repetition: int, warmup: bool, row: dict | None) -> None:
        if row is not None and not row.get("ok"):
            self.failed += 1
        failed = f"[red]{self.failed} failed" if self.failed else ""
        self.progress.update(self.task, advance=1, failed=failed, refresh=True)

    def finished(self) -> None:
        self._stop.set()
        if self._redrawer is not None:
            self._redrawer.join()
        if self.task is not None:
            self.progress.update(self.task, description="done")
        self.progress.stop()


def progress_for(repetitions: int, warmups: int, stream: IO[str] | None = None) -> ProgressSink:
    """A rich bar when `stream` is a terminal, plain lines when it is a pipe or file."""
    stream = stream or sys.stdout
    if stream.isatty():
        return RichProgress(repetitions, warmups, Console(file=stream))
    return PlainProgress(repetitions, warmups, stream)
