"""Longest work first: the order in which pytest-xdist hands out the suite's work units.

`--dist loadgroup` cuts the suite into units (a group — a module with a costly module-scoped fixture, the
demo, the `exclusive` tests — or a single test) and gives a worker the next unit of its queue whenever the
worker has two tests or fewer left. xdist's queue is the groups by their number of tests, then single
tests in collection order: a 70-s real-server test collected late, or a group with few but long tests,
starts when the other worker has almost nothing left, and the run ends with one worker idle while the
other finishes it.

Here a worker is given, each time, the unit with the most recorded seconds left in the queue (longest
processing time first: the long units run side by side from the start and the short tests fill in at the
end). The seconds come from tests/durations.json, each test's time in a whole run of the suite
(`bench/suite_time.py --record-durations tests/durations.json`, tests of a second or more); a test not in
it counts as DEFAULT_S. A stale file costs balance, never a test: every unit still runs exactly once, on
one worker, with its group intact; only the order changes. `-n0` runs in collection order as before.
"""

from __future__ import annotations

import json
from pathlib import Path

DURATIONS = Path(__file__).with_name("durations.json")
DEFAULT_S = 0.2  # a test under a second: most of the suite


def base_id(nodeid: str) -> str:
    """A node id without the "@group" that --dist loadgroup appends (tests/workers.LoadgroupIds)."""
    at = nodeid.rfind("@")
    return nodeid[:at] if at > nodeid.rfind("]") else nodeid


def load_durations(path: Path = DURATIONS) -> dict[str, float]:
    try:
        return {test: float(seconds) for test, seconds in json.loads(path.read_text()).items()}
    except FileNotFoundError:
        return {}


def make_scheduler(config, log, durations: dict[str, float] | None = None):
    from xdist.scheduler import LoadGroupScheduling

    class LongestFirst(LoadGroupScheduling):
        recorded = load_durations() if durations is None else durations

        def unit_seconds(self, unit: dict[str, bool]) -> float:
            return sum(self.recorded.get(base_id(nodeid), DEFAULT_S) for nodeid in unit)

        def _assign_work_unit(self, node) -> None:
            # xdist pops the queue's first unit: put the longest there (the first of equals keeps its place).
            longest = max(self.workqueue, key=lambda scope: self.unit_seconds(self.workqueue[scope]))
            self.workqueue.move_to_end(longest, last=False)
            super()._assign_work_unit(node)

    return LongestFirst(config, log)
