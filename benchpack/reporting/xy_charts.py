"""Inline SVG charts of points on two numeric axes: scatter plots and timelines.

The same rules as `benchpack.reporting.charts` (whose helpers this reuses): pure
functions to an SVG string, presentation attributes only (a strict CSP draws
it), a `viewBox` so CSS scales it to any width, every label XML-escaped, and
every point with a `<title>` tooltip carrying its exact values.

- `scatter_chart`: e.g. pass rate against decode speed, with a Pareto front
  drawn as a step line through the points no other point beats on both axes.
- `timeline_chart`: a metric over time, points coloured by series (runtime
  version) and joined in order; flagged points get a ring and a marker.

Missing coordinates (None, NaN, inf) are left out of the drawing and counted
in the description, never drawn at zero.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from dataclasses import dataclass
from typing import Callable, Sequence

from benchpack.reporting.charts import FONT_PX, GRID, MUTED, PALETTE, TEXT, _attr, _text, exact_value, format_value, nice_ticks
from benchpack.measurement.stats import is_number

MARGIN_LEFT, MARGIN_RIGHT, MARGIN_TOP, MARGIN_BOTTOM = 64, 16, 34, 64
Y_LABEL_X = 22  # the rotated y label's baseline
RADIUS = 4.5
FRONT = "#c0392b"
FLAG_COLOURS = {"regression": "#c0392b", "improvement": "#186a2a"}


@dataclass(frozen=True)
class XYPoint:
    x: float | None
    y: float | None
    label: str
    series: str = ""
    href: str | None = None  # the point links here (a run page)
    detail: str = ""  # extra tooltip lines
    flag: str = ""  # "regression" | "improvement" | "" (timelines)


def pareto_front(points: Sequence[XYPoint], *, x_higher_is_better: bool = True,
                 y_higher_is_better: bool = True) -> list[XYPoint]:
    """The points no other point beats on both axes (ties do not dominate), sorted by x.

    A point is dominated when another is at least as good on both axes and
    strictly better on one."""
    present = [p for p in points if is_number(p.x) and is_number(p.y)]
    sx = 1 if x_higher_is_better else -1
    sy = 1 if y_higher_is_better else -1
    front = []
    for p in present:
        dominated = any(
            sx * q.x >= sx * p.x and sy * q.y >= sy * p.y and (sx * q.x > sx * p.x or sy * q.y > sy * p.y)
            for q in present)
        if not dominated:
            front.append(p)
    return sorted(front, key=lambda p: (p.x, p.y))


def _scale(low: float, high: float, start: float, end: float) -> Callable[[float], float]:
    span = (high - low) or 1.0
    return lambda v: start + (v - low) / span * (end - start)


def _id(title: str, points: Sequence[XYPoint]) -> str:
    digest = hashlib.sha256((title + "".join(f"{p.label}{p.x}{p.y}" for p in points)).encode()).hexdigest()
    return f"bpxy-{digest[:10]}"


def _frame(width: int, height: int, title: str, x_label: str, y_label: str, x_ticks, y_ticks, sx, sy,
           x_tick_text, chart_id: str, description: str) -> list[str]:
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="bp-chart bp-xy" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" role="img" aria-labelledby="{chart_id}-t {chart_id}-d" '
        f'font-family="system-ui, sans-serif" font-size="{FONT_PX}">',
        f'<title id="{chart_id}-t">{_text(title)}</title>',
        f'<desc id="{chart_id}-d">{_text(description)}</desc>',
        f'<text x="{MARGIN_LEFT}" y="18" fill="{TEXT}" font-weight="600">{_text(title)}</text>',
    ]
    bottom, top = height - MARGIN_BOTTOM, MARGIN_TOP
    for tick in y_ticks:
        y = sy(tick)
        parts.append(f'<line x1="{MARGIN_LEFT}" x2="{width - MARGIN_RIGHT}" y1="{y:.1f}" y2="{y:.1f}" stroke="{GRID}"/>')
        parts.append(f'<text x="{MARGIN_LEFT - 6}" y="{y + 4:.1f}" text-anchor="end" fill="{MUTED}">'
                     f'{_text(format_value(tick))}</text>')
    for tick in x_ticks:
        x = sx(tick)
        parts.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{top}" y2="{bottom}" stroke="{GRID}"/>')
        label = x_tick_text(tick)
        half = len(label) * FONT_PX * 0.3  # about half the label's width
        # A label that would run past an edge of the frame is anchored at that edge instead (never cut off).
        anchor = "end" if x + half > width - 2 else "start" if x - half < 2 else "middle"
        parts.append(f'<text x="{x:.1f}" y="{bottom + 16}" text-anchor="{anchor}" fill="{MUTED}">'
                     f'{_text(label)}</text>')
    parts.append(f'<text x="{(MARGIN_LEFT + width - MARGIN_RIGHT) / 2:.1f}" y="{height - 30}" text-anchor="middle" '
                 f'fill="{TEXT}">{_text(x_label)}</text>')
    # The rotated y label's ascent reaches left of its baseline: at a phone's 20 px (site.css) about 19 units,
    # so a baseline at 14 cut it off by 5 (issue 32 item 7, measured in Chromium by the demo walk).
    parts.append(f'<text x="{Y_LABEL_X}" y="{(top + bottom) / 2:.1f}" text-anchor="middle" fill="{TEXT}" '
                 f'transform="rotate(-90 {Y_LABEL_X} {(top + bottom) / 2:.1f})">{_text(y_label)}</text>')
    return parts


def _legend(series: list[str], colours: dict[str, str], width: int, y: float, extra: list[tuple[str, str]]) -> list[str]:
    parts, x = [], MARGIN_LEFT
    for name, colour in [*((s, colours[s]) for s in series if s), *extra]:
        text = name if len(name) <= 28 else name[:27] + "…"
        # room for the label at the size a phone's stylesheet draws it (site.css: ~1.6x the 13 px here)
        step = 22 + len(text) * 11.5
        if x + step > width - MARGIN_RIGHT and x > MARGIN_LEFT:
            break  # the tooltip of every point still names its series
        parts.append(f'<circle cx="{x + 5}" cy="{y - 4}" r="5" fill="{colour}"/>')
        parts.append(f'<text x="{x + 14}" y="{y}" fill="{TEXT}" class="bp-legend">{_text(text)}</text>')
        x += step
    return parts


def _point(p: XYPoint, cx: float, cy: float, colour: str, tooltip: str) -> str:
    ring = ""
    if p.flag in FLAG_COLOURS:
        ring = f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="{RADIUS + 4}" fill="none" stroke="{FLAG_COLOURS[p.flag]}" stroke-width="2"/>'
    body = (f'<g class="bp-point{" bp-flag-" + p.flag if p.flag else ""}"><title>{_text(tooltip)}</title>{ring}'
            f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="{RADIUS}" fill="{colour}" fill-opacity="0.85"/></g>')
    return f'<a href="{_attr(p.href)}">{body}</a>' if p.href else body


def _colours(points: Sequence[XYPoint]) -> tuple[list[str], dict[str, str]]:
    series = list(dict.fromkeys(p.series for p in points))
    return series, {s: PALETTE[i % len(PALETTE)] for i, s in enumerate(series)}


def _domain(values: list[float], include_zero: bool) -> list[float]:
    values = list(values) + ([0.0] if include_zero else [])
    low, high = min(values), max(values)
    if low == high:
        low, high = low - (abs(low) * 0.1 or 1), high + (abs(high) * 0.1 or 1)
    return nice_ticks(low, high)


def scatter_chart(points: Sequence[XYPoint], *, title: str, x_label: str, y_label: str, x_unit: str = "",
                  y_unit: str = "", front: Sequence[XYPoint] = (), width: int = 640, height: int = 400) -> str:
    """Points on linear axes from zero; `front` (from `pareto_front`) drawn as a step line."""
    drawn = [p for p in points if is_number(p.x) and is_number(p.y)]
    left_out = len(points) - len(drawn)
    if not drawn:
        return ""
    xt, yt = _domain([p.x for p in drawn], True), _domain([p.y for p in drawn], True)
    sx = _scale(xt[0], xt[-1], MARGIN_LEFT, width - MARGIN_RIGHT)
    sy = _scale(yt[0], yt[-1], height - MARGIN_BOTTOM, MARGIN_TOP)
    chart_id = _id(title, drawn)
    description = (f"{len(drawn)} point(s); {len(front)} on the Pareto front"
                   + (f"; {left_out} without both values not drawn" if left_out else ""))
    parts = _frame(width, height, title, _unit(x_label, x_unit), _unit(y_label, y_unit), xt, yt, sx, sy,
                   format_value, chart_id, description)
    if len(front) > 1:
        path = " ".join(f"{'M' if i == 0 else 'L'}{sx(p.x):.1f},{sy(p.y):.1f}" for i, p in enumerate(front))
        parts.append(f'<path class="bp-front" d="{path}" fill="none" stroke="{FRONT}" stroke-width="1.5" '
                     f'stroke-dasharray="5 3"/>')
    on_front = {id(p) for p in front}
    series, colours = _colours(drawn)
    for p in drawn:
        tip = [p.label, f"{x_label}: {exact_value(p.x)}{' ' + x_unit if x_unit else ''}",
               f"{y_label}: {exact_value(p.y)}{' ' + y_unit if y_unit else ''}"]
        if p.series:
            tip.append(p.series)
        if id(p) in on_front:
            tip.append("on the Pareto front: nothing else is both faster and more correct")
        if p.detail:
            tip.append(p.detail)
        parts.append(_point(p, sx(p.x), sy(p.y), colours[p.series], "\n".join(tip)))
    extra = [("Pareto front", FRONT)] if len(front) > 1 else []
    parts += _legend(series, colours, width, height - 8, extra)
    parts.append("</svg>")
    return "".join(parts)


def _unit(label: str, unit: str) -> str:
    return f"{label} ({unit})" if unit else label


def timeline_chart(points: Sequence[XYPoint], *, title: str, y_label: str, y_unit: str = "", width: int = 640,
                   height: int = 340) -> str:
    """`x`: POSIX timestamps; points joined in x order, coloured by series, flagged ones ringed."""
    drawn = sorted((p for p in points if is_number(p.x) and is_number(p.y)), key=lambda p: p.x)
    if not drawn:
        return ""
    xs = [p.x for p in drawn]
    low, high = min(xs), max(xs)
    if low == high:
        low, high = low - 60, high + 60  # one run: a two-minute window around it, labelled in times
    xt, x_format = _time_ticks(low, high)
    yt = _domain([p.y for p in drawn], True)
    sx = _scale(low, high, MARGIN_LEFT + 8, width - MARGIN_RIGHT - 8)
    sy = _scale(yt[0], yt[-1], height - MARGIN_BOTTOM, MARGIN_TOP)
    flagged = [p for p in drawn if p.flag]
    chart_id = _id(title, drawn)
    description = f"{len(drawn)} run(s) over time; {len(flagged)} flagged change(s)"
    parts = _frame(width, height, title, "published", _unit(y_label, y_unit), xt, yt, sx, sy,
                   lambda t: dt.datetime.fromtimestamp(t, dt.timezone.utc).strftime(x_format), chart_id,
                   description)
    path = " ".join(f"{'M' if i == 0 else 'L'}{sx(p.x):.1f},{sy(p.y):.1f}" for i, p in enumerate(drawn))
    parts.append(f'<path d="{path}" fill="none" stroke="{MUTED}" stroke-width="1"/>')
    series, colours = _colours(drawn)
    for p in drawn:
        when = dt.datetime.fromtimestamp(p.x, dt.timezone.utc).strftime("%Y-%m-%d %H:%M")
        tip = [p.label, f"{when} UTC", f"{y_label}: {exact_value(p.y)}{' ' + y_unit if y_unit else ''}"]
        if p.series:
            tip.append(p.series)
        if p.detail:
            tip.append(p.detail)
        parts.append(_point(p, sx(p.x), sy(p.y), colours[p.series], "\n".join(tip)))
    extra = [(name, colour) for name, colour in FLAG_COLOURS.items() if any(p.flag == name for p in drawn)]
    parts += _legend(series, colours, width, height - 8, extra)
    parts.append("</svg>")
    return "".join(parts)


# Tick steps a reader counts in (seconds), and the label each needs: a span of minutes gets times,
# a span of weeks gets dates, never five copies of one date.
TIME_STEPS = [(1, "%H:%M:%S"), (2, "%H:%M:%S"), (5, "%H:%M:%S"), (10, "%H:%M:%S"), (15, "%H:%M:%S"),
              (30, "%H:%M:%S"), (60, "%H:%M"), (120, "%H:%M"), (300, "%H:%M"), (600, "%H:%M"), (900, "%H:%M"),
              (1800, "%H:%M"), (3600, "%H:%M"), (7200, "%H:%M"), (10800, "%H:%M"), (21600, "%m-%d %H:%M"),
              (43200, "%m-%d %H:%M"), (86400, "%Y-%m-%d"), (2 * 86400, "%Y-%m-%d"), (7 * 86400, "%Y-%m-%d"),
              (14 * 86400, "%Y-%m-%d"), (30 * 86400, "%Y-%m-%d"), (91 * 86400, "%Y-%m-%d"), (365 * 86400, "%Y-%m-%d")]


def _time_ticks(low: float, high: float, target: int = 5) -> tuple[list[float], str]:
    """Ticks at whole steps (seconds, minutes, hours, days…) inside the data's real range, at most
    `target` of them, and the strftime format that tells them apart (UTC)."""
    span = high - low
    fmt = "%Y-%m-%d"
    step = span / target
    for candidate, candidate_fmt in TIME_STEPS:
        if span / candidate <= target:
            step, fmt = candidate, candidate_fmt
            break
    first = low if low % step == 0 else (low // step + 1) * step
    ticks = []
    t = first
    while t <= high + 1e-9:
        ticks.append(t)
        t += step
    if not ticks:  # a range shorter than the smallest step
        ticks = [low]
    crosses_days = (dt.datetime.fromtimestamp(low, dt.timezone.utc).date()
                    != dt.datetime.fromtimestamp(high, dt.timezone.utc).date())
    if step < 86400 and crosses_days and "%m-%d" not in fmt:
        fmt = "%m-%d " + fmt
    return ticks, fmt
