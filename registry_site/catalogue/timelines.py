"""Regression timelines: one metric of one workload on one model + hardware class, over time.

A timeline's points are public runs in publication order; each point carries
its runtime version, so a step between two llama.cpp builds shows up as a
change at the first run of the new build. The web page and the API share this.

Change detection needs evidence (docs/leaderboards.md, "Change detection"):
a *step* is a level that moved and stayed, so it is judged on the run where
it starts and the runs that confirm it, against the runs before it:

- before: the (up to) LOOKBACK runs just before the candidate; at least
  MIN_PRIOR of them, or there is no verdict ("n more earlier runs needed");
- after: the candidate and the CONFIRM - 1 runs after it; until they exist the
  newest runs have no verdict yet ("n more runs needed to confirm");
- flagged only when every "after" run lies beyond the same end of the
  "before" runs' whole spread (all below its minimum, or all above its
  maximum) AND the "after" median differs from the "before" median by at
  least MIN_EFFECT; only the first run of a step is flagged;
- the direction says regression or improvement (lower is better for times,
  higher for rates and pass rate).

Why: with unchanged, independent runs the chance that 3 new runs all fall
below the lowest (or above the highest) of 20 earlier ones is 2 / C(23, 3),
about 0.1 %, whatever the noise's shape; a single run outside the spread of
20 happens about 10 % of the time (2/21). On the seeded catalogue (4 %
run-to-run noise) the one-run rule flagged 9 % of all runs; this one finds
the planted step. MIN_EFFECT keeps a very steady series from flagging a
move too small to matter.

Pure functions over plain points; the queries live in `points_for`, `series_of`, `scan`.
"""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass
from datetime import datetime

from django.db.models import F, Sum

from benchpack.measurement.stats import is_number
from benchpack.results import metrics as metric_registry

MIN_PRIOR = 5
LOOKBACK = 20
CONFIRM = 3
MIN_EFFECT = 0.05
# metric -> (label, unit, higher_is_better), from benchpack.results.metrics: the ranked figures only
# (decode is 1/tpot_s; the legacy decode_tps has no timeline).
METRICS = {name: (metric_registry.label(name), metric_registry.metric(name).unit,
                  metric_registry.metric(name).direction == metric_registry.HIGHER)
           for name in ("decode_rate", "ttft_s", "prefill_tps", "tpot_s", "wall_s", "pass_rate")}
DEFAULT_METRIC = "decode_rate"

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
                   confirm: int = CONFIRM, min_effect: float = MIN_EFFECT) -> list[Verdict]:
    """One Verdict per point with a value, in the points' order (oldest first)."""
    higher_is_better = metric_direction(metric)
    judged = [p for p in points if is_number(p.value)]
    values = [float(p.value) for p in judged]
    verdicts: list[Verdict] = []
    last_flag: tuple[int, bool] | None = None  # (index, went up) of the latest flagged step
    for i, point in enumerate(judged):
        before, after = values[max(0, i - lookback):i], values[i:i + confirm]
        verdict = _judge(point, before, after, higher_is_better, min_prior, confirm, min_effect)
        if verdict.verdict in (REGRESSION, IMPROVEMENT):
            went_up = verdict.change > 0
            if last_flag is not None and i - last_flag[0] < confirm and last_flag[1] == went_up:
                # the same step seen again from one run later: it was flagged where it started
                verdict = Verdict(point.run_id, NO_CHANGE, reason=f"part of the step flagged at run "
                                  f"#{judged[last_flag[0]].run_id}", **_evidence(before, after))
            else:
                last_flag = (i, went_up)
        verdicts.append(verdict)
    return verdicts


def _evidence(before: list[float], after: list[float]) -> dict:
    middle = statistics.median(before)
    change = statistics.median(after) / middle - 1 if middle else None
    return dict(prior=len(before), baseline_median=middle, baseline_min=min(before), baseline_max=max(before),
                change=change)


def _judge(point: Point, before: list[float], after: list[float], higher_is_better: bool, min_prior: int,
           confirm: int, min_effect: float) -> Verdict:
    if len(before) < min_prior:
        need = min_prior - len(before)
        return Verdict(point.run_id, NO_VERDICT, len(before),
                       reason=f"{len(before)} earlier run(s); {need} more needed before a change can be called")
    evidence = _evidence(before, after)
    if len(after) < confirm:
        need = confirm - len(after)
        return Verdict(point.run_id, NO_VERDICT, reason=f"{need} more run(s) after this one needed to confirm "
                                                         "or rule out a step", **evidence)
    low, high, change = evidence["baseline_min"], evidence["baseline_max"], evidence["change"]
    below, above = all(v < low for v in after), all(v > high for v in after)
    window = f"the {len(before)} runs before it"
    if not (below or above):
        return Verdict(point.run_id, NO_CHANGE, reason=f"this run and the next {confirm - 1} are not all beyond "
                                                       f"the spread of {window}", **evidence)
    if change is None or abs(change) < min_effect:
        size = "unknown" if change is None else f"{abs(change):.1%}"
        return Verdict(point.run_id, NO_CHANGE, reason=f"beyond the spread of {window} but only {size} from "
                                                       f"their median (a step needs {min_effect:.0%})", **evidence)
    better = above == higher_is_better
    side = "above the highest" if above else "below the lowest"
    return Verdict(point.run_id, IMPROVEMENT if better else REGRESSION,
                   reason=f"this run and the next {confirm - 1} are all {side} of {window}; their median is "
                          f"{abs(change):.1%} {'above' if above else 'below'} those runs' median", **evidence)


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
    metric = str(value or DEFAULT_METRIC).strip()
    if metric not in METRICS:
        raise TimelineQueryError("metric", f"{metric!r} is not one of {', '.join(METRICS)}")
    return metric


def _system_keys(series: Series) -> list[str]:
    """The systems (model + quantization + runtime + version + hardware) in this series, read from the
    leaderboard rows of its workload: a few hundred rows on one index, not a scan of the case rows."""
    from registry_site.catalogue.models import LeaderboardEntry

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
    metric_direction(metric)
    cases = _public_cases(queryset).filter(workload_key=series.workload_key, system_key__in=_system_keys(series),
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
    from registry_site.catalogue.models import LeaderboardEntry

    return list(LeaderboardEntry.objects.filter(workload_key=workload_key)
                .values("model", "hardware_class", "runtime_name", quantization=F("model_quantization"))
                .annotate(runs=Sum("run_count")).order_by("-runs", "model", "hardware_class")[:limit])


def _public_cases(runs=None):
    """Public case rows as joins (`PublishedCase.objects.public()`): an IN over every public
    run id cost ~0.4 s per timeline on SQLite at 300k cases. `runs` narrows to those runs."""
    from registry_site.catalogue.models import PublishedCase

    cases = PublishedCase.objects.public()
    return cases if runs is None else cases.filter(run__in=runs)


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


def scan(metric: str = DEFAULT_METRIC, *, queryset=None, chunk_size: int = 5000):
    """Every series of the public catalogue through `detect_changes`, streaming the case rows once.

    Returns (series_count, verdict_counts, flagged): how many series, how many points got each
    verdict, and the flagged changes. For the closing report on a seeded catalogue and for
    operators (`manage.py timeline_changes`); the pages judge one series at a time."""
    metric_direction(metric)
    key = ("workload_key", "run__model", "run__hardware_class", "run__runtime_name", "run__model_quantization")
    rows = (_public_cases(queryset)
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
