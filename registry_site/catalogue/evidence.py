"""Evidence the catalogue shows but does not own, handed to it by the app that owns it.

A run's reproduction attempts are the run queue's (submissions.runqueue); the
public API shows their summary beside the run. The submissions app provides
the function at start-up (`SubmissionsConfig.ready`), so the catalogue never
imports it; without a provider the run has no attempts to show.
"""

from __future__ import annotations

from typing import Callable

NO_REPRODUCTION = {"state": "", "evidence": None, "reproduces": None, "attempts": 0}

_reproduction_summary: Callable | None = None


def provide_reproduction_summary(function: Callable) -> None:
    global _reproduction_summary
    _reproduction_summary = function


def reproduction_summary(run) -> dict:
    return dict(NO_REPRODUCTION) if _reproduction_summary is None else _reproduction_summary(run)
