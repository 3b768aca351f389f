"""Regression timelines: one metric of one workload on one model + hardware class, over time.

A timeline's points are public runs in publication order; each point carries
its runtime version, so a step between two llama.cpp builds shows up as a
change at the first run of the new build. The web page and the API share this.

Change detection needs evidence (docs/leaderboards.md, "Change detection"),
in the spirit of conbench's lookback z-score and Bencher's thresholds but with
a rule a reader can check by eye on the chart:

- a point gets a verdict only when at least MIN_PRIOR earlier points exist in
  its lookback window (the LOOKBACK points just before it); with fewer it is
  "no verdict" and the page says how many more runs are needed;
- it is flagged only when it lies outside the window's whole spread
  (below its minimum or above its maximum) AND differs from the window's
  median by at least MIN_EFFECT (relative): a tight baseline does not turn a
  0.3 % wobble into an alarm, a noisy one does not turn noise into a step;
- the direction says whether it is a regression or an improvement
  (lower is better for times, higher for rates and pass rates).

Pure functions over plain points; the one query lives in `points_for`.
"""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass
from datetime import datetime

from django.db.models import F, Sum

from benchpack.stats import is_number

MIN_PRIOR = 5
LOOKBACK = 20
MIN_EFFECT = 0.05
# metric -> (label, unit, higher_is_better)
METRICS = {
    "decode_tps": ("decode speed", "tok/s", True),
    "ttft_s": ("time to first token", "s", False),
    "prefill_tps": ("prefill speed", "tok/s", True),
    "tpot_s": ("time per output token", "s", False),
    "wall_s": ("wall time", "s", False),
    "pass_rate": ("pass rate", "", True),
}

REGRESSION, IMPROVEMENT, NO_CHANGE, NO_VERDICT = "regression", "improvement", "no-change", "no-verdict"


@dataclass(frozen=True)
class Point:
    run_id: int
    published_at: datetime
    runtime_version: str
    value: float | None
    is_demo: bool = False


@dataclass(frozen=True)
class Verdict:
    """What change detection says about one point, and the evidence it used."""

    run_id: int
    verdict: str  # regression | improvement | no-change | no-verdict
    prior: int  # earlier points in the lookback window with a value
    baseline_median: float | None = None
    baseline_min: float | None = None
    baseline_max: float | None = None
    change: float | None = None  # value / baseline median - 1
    reason: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


def metric_direction(metric: str) -> bool:
    """True when higher is better; an unknown metric is a caller's error."""
    if metric not in METRICS:
        raise ValueError(f"metric: {metric!r} is not one of {', '.join(METRICS)}")
    return METRICS[metric][2]


def detect_changes(points: list[Point], metric: str, *, min_prior: int = MIN_PRIOR, lookback: int = LOOKBACK,
                   min_effect: float = MIN_EFFECT) -> list[Verdict]:
    """One Verdict per point with a value, in the points' order (oldest first)."""
    higher_is_better = metric_direction(metric)
    verdicts = []
    history: list[float] = []
    for point in points:
        if not is_number(point.value):
            continue
        window = history[-lookback:]
        verdicts.append(_judge(point, window, higher_is_better, min_prior, min_effect))
        history.append(float(point.value))
    return verdicts


def _judge(point: Point, window: list[float], higher_is_better: bool, min_prior: int,
           min_effect: float) -> Verdict:
    value = float(point.value)
    if len(window) < min_prior:
        need = min_prior - len(window)
        return Verdict(point.run_id, NO_VERDICT, len(window),
                       reason=f"{len(window)} earlier run(s); {need} more needed before a change can be called")
    low, high, middle = min(window), max(window), statistics.median(window)
    change = value / middle - 1 if middle else None
    base = dict(prior=len(window), baseline_median=middle, baseline_min=low, baseline_max=high, change=change)
    outside = value < low or value > high
    big_enough = change is not None and abs(change) >= min_effect
    if not outside:
        return Verdict(point.run_id, NO_CHANGE, reason=f"inside the spread of the last {len(window)} runs", **base)
    if not big_enough:
        size = "unknown" if change is None else f"{abs(change):.1%}"
        return Verdict(point.run_id, NO_CHANGE, reason=f"outside the spread but only {size} from the median "
                                                        f"(a change needs {min_effect:.0%})", **base)
    better = (value > middle) == higher_is_better
    side = "above the highest" if value > high else "below the lowest"
    return Verdict(point.run_id, IMPROVEMENT if better else REGRESSION,
                   reason=f"{side} of the last {len(window)} runs and {abs(change):.1%} from their median", **base)


@dataclass(frozen=True)
class VersionSummary:
    runtime_version: str
    runs: int
    median: float
    min: float
    max: float
    first_published: datetime


def by_runtime_version(points: list[Point]) -> list[VersionSummary]:
    """Median and spread per runtime version, in order of each version's first appearance."""
    groups: dict[str, list[Point]] = {}
    for point in points:
        if is_number(point.value):
            groups.setdefault(point.runtime_version or "unknown", []).append(point)
    return [VersionSummary(version, len(group), statistics.median(p.value for p in group),
                           min(p.value for p in group), max(p.value for p in group),
                           min(p.published_at for p in group))
            for version, group in groups.items()]


@dataclass(frozen=True)
class Series:
    """What a timeline holds fixed: one workload, one model (+ quantization), one runtime, one hardware class."""

    workload_key: str
    model: str
    hardware_class: str
    runtime_name: str = ""
    quantization: str = ""

    @classmethod
    def from_params(cls, params) -> "Series":
        """From request parameters; `workload`, `model` and `hardware_class` are required."""
        values = {name: str(params.get(name) or "").strip() for name in
                  ("workload", "model", "hardware_class", "runtime", "quantization")}
        for name in ("workload", "model", "hardware_class"):
            if not values[name]:
                raise TimelineQueryError(name, "is required (a timeline fixes workload, model and hardware class)")
        return cls(values["workload"], values["model"], values["hardware_class"], values["runtime"],
                   values["quantization"])

    def params(self) -> dict:
        return {"workload": self.workload_key, "model": self.model, "hardware_class": self.hardware_class,
                "runtime": self.runtime_name, "quantization": self.quantization}


class TimelineQueryError(ValueError):
    """A timeline request that cannot be answered; `param` names the parameter at fault."""

    def __init__(self, param: str, message: str):
        super().__init__(f"{param}: {message}")
        self.param = param
        self.message = message


def parse_metric(value) -> str:
    metric = str(value or "decode_tps").strip()
    if metric not in METRICS:
        raise TimelineQueryError("metric", f"{metric!r} is not one of {', '.join(METRICS)}")
    return metric


def _system_keys(series: Series) -> list[str]:
    """The systems (model + quantization + runtime + version + hardware) in this series, read from the
    leaderboard rows of its workload: a few hundred rows on one index, not a scan of the case rows."""
    from registry_site.models import LeaderboardEntry

    entries = LeaderboardEntry.objects.filter(workload_key=series.workload_key, model=series.model,
                                              hardware_class=series.hardware_class)
    if series.runtime_name:
        entries = entries.filter(runtime_name=series.runtime_name)
    if series.quantization:
        entries = entries.filter(model_quantization=series.quantization)
    return list(entries.values_list("system_key", flat=True))


def points_for(series: Series, metric: str, *, queryset=None) -> list[Point]:
    """Public runs' values of `metric` on the series' workload, oldest first. Demo runs are
    left out once a real run exists in the series (the same rule as the rankings)."""
    from registry_site.models import PublishedCase

    metric_direction(metric)
    cases = PublishedCase.objects.filter(run__in=queryset if queryset is not None else _public_runs(),
                                         workload_key=series.workload_key, system_key__in=_system_keys(series),
                                         run__model=series.model, run__hardware_class=series.hardware_class)
    if series.runtime_name:
        cases = cases.filter(run__runtime_name=series.runtime_name)
    if series.quantization:
        cases = cases.filter(run__model_quantization=series.quantization)
    rows = list(cases.order_by("run__published_at", "run_id").values(
        "run_id", "run__published_at", "run__runtime_name", "run__runtime_version", "run__is_demo",
        *_columns(metric)))
    points = [Point(run_id=r["run_id"], published_at=r["run__published_at"],
                    runtime_version=" ".join(v for v in (r["run__runtime_name"], r["run__runtime_version"]) if v),
                    value=_value(r, metric), is_demo=r["run__is_demo"]) for r in rows]
    if any(not p.is_demo for p in points):
        points = [p for p in points if not p.is_demo]
    return points


def series_of(workload_key: str, *, limit: int = 200) -> list[dict]:
    """The series of one workload that have public runs: {model, hardware_class, runtime_name, quantization,
    runs}, most runs first (from its leaderboard rows, which cover exactly the public runs)."""
    from registry_site.models import LeaderboardEntry

    return list(LeaderboardEntry.objects.filter(workload_key=workload_key)
                .values("model", "hardware_class", "runtime_name", quantization=F("model_quantization"))
                .annotate(runs=Sum("run_count")).order_by("-runs", "model", "hardware_class")[:limit])


def _public_runs():
    from registry_site.models import PublishedRun

    return PublishedRun.objects.public()


def _columns(metric: str) -> list[str]:
    return ["passed_rows", "scored_rows"] if metric == "pass_rate" else [metric]


def _value(row: dict, metric: str) -> float | None:
    if metric == "pass_rate":
        scored = row["scored_rows"]
        return row["passed_rows"] / scored if row["passed_rows"] is not None and scored else None
    return row[metric]


@dataclass(frozen=True)
class FlaggedChange:
    series: Series
    metric: str
    verdict: Verdict
    runtime_version: str
    published_at: datetime


def scan(metric: str = "decode_tps", *, queryset=None, chunk_size: int = 5000):
    """Every series of the public catalogue through `detect_changes`, streaming the case rows once.

    Returns (series_count, verdict_counts, flagged): how many series, how many points got each
    verdict, and the flagged changes. For the closing report on a seeded catalogue and for
    operators (`manage.py timeline_changes`); the pages judge one series at a time."""
    from registry_site.models import PublishedCase

    metric_direction(metric)
    key = ("workload_key", "run__model", "run__hardware_class", "run__runtime_name", "run__model_quantization")
    rows = (PublishedCase.objects.filter(run__in=queryset if queryset is not None else _public_runs())
            .exclude(workload_key="")
            .order_by(*key, "run__published_at", "run_id")
            .values_list(*key, "run_id", "run__published_at", "run__runtime_version", "run__is_demo",
                         *_columns(metric)))
    counts = {REGRESSION: 0, IMPROVEMENT: 0, NO_CHANGE: 0, NO_VERDICT: 0}
    flagged: list[FlaggedChange] = []
    series_count = 0
    current, points = None, []

    def finish():
        nonlocal series_count
        if current is None:
            return
        series_count += 1
        kept = [p for p in points if not p.is_demo] if any(not p.is_demo for p in points) else points
        by_run = {p.run_id: p for p in kept}
        for verdict in detect_changes(kept, metric):
            counts[verdict.verdict] += 1
            if verdict.verdict in (REGRESSION, IMPROVEMENT):
                point = by_run[verdict.run_id]
                flagged.append(FlaggedChange(Series(*current), metric, verdict, point.runtime_version,
                                             point.published_at))

    for row in rows.iterator(chunk_size=chunk_size):
        group = row[:5]
        if group != current:
            finish()
            current, points = group, []
        values = dict(zip(_columns(metric), row[9:]))
        points.append(Point(run_id=row[5], published_at=row[6], runtime_version=row[7] or "", is_demo=row[8],
                            value=_value(values, metric)))
    finish()
    return series_count, counts, flagged
