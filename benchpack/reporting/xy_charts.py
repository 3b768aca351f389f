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
in the description, never drawn at zero. Every text fits the `width` a chart is
drawn at (pages draw each twice, at 640 and at a phone's 360: issue 32 item 7).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import math
from dataclasses import dataclass
from typing import Callable, Sequence

from benchpack.reporting.charts import (BOLD_CHAR_PX, CHAR_PX, FONT_PX, GRID, LINE_HEIGHT_PX, MUTED, PAD, PALETTE, TEXT,
                                       _attr, _text, _truncate, _wrap, exact_value, format_value, nice_ticks)
from benchpack.measurement.stats import is_number

# Every text is laid out for the width the chart is drawn at, by the glyph-width estimate of
# benchpack.reporting.charts (issue 32 item 7): pages draw each chart twice, 640 units wide and at a
# phone's width (registry_site/catalogue/pages/fitted_charts.py), so 13 px text stays 13 px on a phone.
PLOT_LEFT_MIN, PLOT_RIGHT_PAD = 32, 12
TICK_GAP = 8  # the least room between two x tick labels
LEGEND_SWATCH = 14
LEGEND_GAP = 16
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


def _id(title: str, points: Sequence[XYPoint], width: int) -> str:
    # the width too: a page shows both drawings of one chart, and their ids must differ
    digest = hashlib.sha256((f"{title}{width}" + "".join(f"{p.label}{p.x}{p.y}" for p in points)).encode()).hexdigest()
    return f"bpxy-{digest[:10]}"


@dataclass(frozen=True)
class _Layout:
    """Where everything goes at one width: the plot's box, the texts above and below it, the legend rows."""

    width: int
    height: int
    title_lines: list[str]
    axis_lines: list[str]  # the y axis's name and unit, above the plot (a rotated label ran off a phone's chart)
    plot_left: float
    plot_right: float
    plot_top: float
    plot_bottom: float
    x_label_lines: list[str]
    legend_rows: list[list[tuple[str, str, float]]]  # (text, colour, x) per entry
    legend_top: float


def _legend_rows(entries: list[tuple[str, str]], width: int) -> list[list[tuple[str, str, float]]]:
    """Legend entries left to right, wrapping onto further rows; a name longer than a row is cut in the
    middle (every point's tooltip names its series whole)."""
    room = width - 2 * PAD
    rows: list[list[tuple[str, str, float]]] = [[]]
    x = PAD
    for name, colour in entries:
        text = _truncate(name, max(4, int((room - LEGEND_SWATCH) / CHAR_PX)))
        step = LEGEND_SWATCH + len(text) * CHAR_PX
        if x + step > width - PAD and rows[-1]:
            rows.append([])
            x = PAD
        rows[-1].append((text, colour, x))
        x += step + LEGEND_GAP
    return [row for row in rows if row]


def _layout(width: int, plot_height: int, title: str, x_label: str, y_label: str, y_tick_texts: list[str],
            legend: list[tuple[str, str]]) -> _Layout:
    inner = width - 2 * PAD
    title_lines = _wrap(title, int(inner / BOLD_CHAR_PX))
    axis_lines = _wrap(y_label, int(inner / CHAR_PX))
    plot_left = max(PLOT_LEFT_MIN, math.ceil(max(len(t) for t in y_tick_texts) * CHAR_PX + 2 * PAD))
    plot_right = width - PLOT_RIGHT_PAD
    plot_top = PAD + (len(title_lines) + len(axis_lines)) * LINE_HEIGHT_PX + 2 * PAD
    plot_bottom = plot_top + plot_height
    # the x axis's name is centred on the plot: it wraps to the plot's width, so it never leaves the chart
    x_label_lines = _wrap(x_label, int((plot_right - plot_left) / CHAR_PX))
    legend_top = plot_bottom + 16 + len(x_label_lines) * LINE_HEIGHT_PX + PAD
    rows = _legend_rows(legend, width)
    height = math.ceil(legend_top + len(rows) * (LINE_HEIGHT_PX + 4) + PAD)
    return _Layout(width, height, title_lines, axis_lines, plot_left, plot_right, plot_top, plot_bottom,
                   x_label_lines, rows, legend_top)


def _placed_ticks(positions: list[float], labels: list[str], width: int) -> list[tuple[str, str, float, float, float]]:
    """(label, anchor, x, left, right) of each x tick label: centred on its tick, or anchored at the chart's
    edge where centring would run past it (never cut off)."""
    placed = []
    for x, label in zip(positions, labels):
        wide = len(label) * CHAR_PX
        anchor = "end" if x + wide / 2 > width - 2 else "start" if x - wide / 2 < 2 else "middle"
        left = x - wide if anchor == "end" else x if anchor == "start" else x - wide / 2
        placed.append((label, anchor, x, left, left + wide))
    return placed


def _ticks_that_fit(choose: Callable[[int], tuple[list[float], Callable[[float], str], Callable[[float], float]]],
                    width: int) -> tuple[list[tuple[str, str, float, float, float]], Callable[[float], float]]:
    """The most x ticks (at most five) whose labels do not overlap at this width, placed, and the x scale they
    go with: `choose(target)` gives the ticks for a target count, their label and the scale."""
    for target in (5, 4, 3, 2):
        ticks, label_of, position = choose(target)
        placed = _placed_ticks([position(t) for t in ticks], [label_of(t) for t in ticks], width)
        if all(b[3] - a[4] >= TICK_GAP for a, b in zip(placed, placed[1:])):
            return placed, position
    # even two crowd each other: the first and the last, or the first alone
    ends = placed[:1] + placed[-1:] if len(placed) > 1 and placed[-1][3] - placed[0][4] >= TICK_GAP else placed[:1]
    return ends, position


def _frame(layout: _Layout, title: str, x_ticks, y_ticks, sy, chart_id: str, description: str,
           css_class: str) -> list[str]:
    width, height = layout.width, layout.height
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="{_attr(("bp-chart bp-xy " + css_class).strip())}" '
        f'viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" '
        f'aria-labelledby="{chart_id}-t {chart_id}-d" font-family="system-ui, sans-serif" font-size="{FONT_PX}">',
        f'<title id="{chart_id}-t">{_text(title)}</title>',
        f'<desc id="{chart_id}-d">{_text(description)}</desc>',
    ]
    y = PAD
    for line in layout.title_lines:
        y += LINE_HEIGHT_PX
        parts.append(f'<text class="bp-title" x="{PAD}" y="{y - 4}" fill="{TEXT}" font-weight="600">{_text(line)}</text>')
    y += PAD
    for line in layout.axis_lines:
        y += LINE_HEIGHT_PX
        parts.append(f'<text class="bp-axis-label" x="{PAD}" y="{y - 4}" fill="{MUTED}">{_text(line)}</text>')
    left, right, top, bottom = layout.plot_left, layout.plot_right, layout.plot_top, layout.plot_bottom
    for tick in y_ticks:
        ty = sy(tick)
        parts.append(f'<line x1="{left}" x2="{right}" y1="{ty:.1f}" y2="{ty:.1f}" stroke="{GRID}"/>')
        parts.append(f'<text x="{left - 6}" y="{ty + 4:.1f}" text-anchor="end" fill="{MUTED}">'
                     f'{_text(format_value(tick))}</text>')
    for label, anchor, x, _, _ in x_ticks:
        parts.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{top}" y2="{bottom}" stroke="{GRID}"/>')
        parts.append(f'<text class="bp-x-tick" x="{x:.1f}" y="{bottom + 16}" text-anchor="{anchor}" fill="{MUTED}">'
                     f'{_text(label)}</text>')
    for i, line in enumerate(layout.x_label_lines):
        parts.append(f'<text class="bp-axis-label" x="{(left + right) / 2:.1f}" y="{bottom + 16 + (i + 1) * LINE_HEIGHT_PX}" '
                     f'text-anchor="middle" fill="{TEXT}">{_text(line)}</text>')
    return parts


def _legend(layout: _Layout) -> list[str]:
    parts = []
    for number, row in enumerate(layout.legend_rows):
        y = layout.legend_top + number * (LINE_HEIGHT_PX + 4) + LINE_HEIGHT_PX - 4
        for text, colour, x in row:
            parts.append(f'<circle cx="{x + 5:.1f}" cy="{y - 4}" r="5" fill="{colour}"/>')
            parts.append(f'<text x="{x + LEGEND_SWATCH:.1f}" y="{y}" fill="{TEXT}" class="bp-legend">{_text(text)}</text>')
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


def _domain(values: list[float], include_zero: bool, target: int = 5) -> list[float]:
    values = list(values) + ([0.0] if include_zero else [])
    low, high = min(values), max(values)
    if low == high:
        low, high = low - (abs(low) * 0.1 or 1), high + (abs(high) * 0.1 or 1)
    return nice_ticks(low, high, target)


def scatter_chart(points: Sequence[XYPoint], *, title: str, x_label: str, y_label: str, x_unit: str = "",
                  y_unit: str = "", front: Sequence[XYPoint] = (), width: int = 640, plot_height: int = 300,
                  css_class: str = "") -> str:
    """Points on linear axes from zero; `front` (from `pareto_front`) drawn as a step line. Every text fits
    `width` at 13 px; `css_class` is added to the root's class (e.g. "bp-fitted": the page keeps its 13 px)."""
    drawn = [p for p in points if is_number(p.x) and is_number(p.y)]
    left_out = len(points) - len(drawn)
    if not drawn:
        return ""
    yt = _domain([p.y for p in drawn], True)
    series, colours = _colours(drawn)
    extra = [("Pareto front", FRONT)] if len(front) > 1 else []
    layout = _layout(width, plot_height, title, _unit(x_label, x_unit), _unit(y_label, y_unit),
                     [format_value(t) for t in yt], [*((s, colours[s]) for s in series if s), *extra])

    def choose(target: int):
        xt = _domain([p.x for p in drawn], True, target)
        return xt, format_value, _scale(xt[0], xt[-1], layout.plot_left, layout.plot_right)

    x_ticks, sx = _ticks_that_fit(choose, width)
    sy = _scale(yt[0], yt[-1], layout.plot_bottom, layout.plot_top)
    chart_id = _id(title, drawn, width)
    description = (f"{len(drawn)} point(s); {len(front)} on the Pareto front"
                   + (f"; {left_out} without both values not drawn" if left_out else ""))
    parts = _frame(layout, title, x_ticks, yt, sy, chart_id, description, css_class)
    if len(front) > 1:
        path = " ".join(f"{'M' if i == 0 else 'L'}{sx(p.x):.1f},{sy(p.y):.1f}" for i, p in enumerate(front))
        parts.append(f'<path class="bp-front" d="{path}" fill="none" stroke="{FRONT}" stroke-width="1.5" '
                     f'stroke-dasharray="5 3"/>')
    on_front = {id(p) for p in front}
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
    parts += _legend(layout)
    parts.append("</svg>")
    return "".join(parts)


def _unit(label: str, unit: str) -> str:
    return f"{label} ({unit})" if unit else label


def timeline_chart(points: Sequence[XYPoint], *, title: str, y_label: str, y_unit: str = "", width: int = 640,
                   plot_height: int = 240, css_class: str = "") -> str:
    """`x`: POSIX timestamps; points joined in x order, coloured by series, flagged ones ringed. Every text
    fits `width` at 13 px (fewer date ticks on a narrow drawing); `css_class` as scatter_chart's."""
    drawn = sorted((p for p in points if is_number(p.x) and is_number(p.y)), key=lambda p: p.x)
    if not drawn:
        return ""
    xs = [p.x for p in drawn]
    low, high = min(xs), max(xs)
    if low == high:
        low, high = low - 60, high + 60  # one run: a two-minute window around it, labelled in times
    yt = _domain([p.y for p in drawn], True)
    series, colours = _colours(drawn)
    flagged = [p for p in drawn if p.flag]
    extra = [(name, colour) for name, colour in FLAG_COLOURS.items() if any(p.flag == name for p in drawn)]
    layout = _layout(width, plot_height, title, "published", _unit(y_label, y_unit), [format_value(t) for t in yt],
                     [*((s, colours[s]) for s in series if s), *extra])
    sx = _scale(low, high, layout.plot_left + 8, layout.plot_right - 8)

    def choose(target: int):
        ticks, x_format = _time_ticks(low, high, target)
        return ticks, lambda t: dt.datetime.fromtimestamp(t, dt.timezone.utc).strftime(x_format), sx

    x_ticks, _ = _ticks_that_fit(choose, width)
    sy = _scale(yt[0], yt[-1], layout.plot_bottom, layout.plot_top)
    chart_id = _id(title, drawn, width)
    description = f"{len(drawn)} run(s) over time; {len(flagged)} flagged change(s)"
    parts = _frame(layout, title, x_ticks, yt, sy, chart_id, description, css_class)
    path = " ".join(f"{'M' if i == 0 else 'L'}{sx(p.x):.1f},{sy(p.y):.1f}" for i, p in enumerate(drawn))
    parts.append(f'<path d="{path}" fill="none" stroke="{MUTED}" stroke-width="1"/>')
    for p in drawn:
        when = dt.datetime.fromtimestamp(p.x, dt.timezone.utc).strftime("%Y-%m-%d %H:%M")
        tip = [p.label, f"{when} UTC", f"{y_label}: {exact_value(p.y)}{' ' + y_unit if y_unit else ''}"]
        if p.series:
            tip.append(p.series)
        if p.detail:
            tip.append(p.detail)
        parts.append(_point(p, sx(p.x), sy(p.y), colours[p.series], "\n".join(tip)))
    parts += _legend(layout)
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
