"""Small inline SVG bar charts for the places people compare numbers.

Pure functions from numbers to an SVG string: no JavaScript, no external
fonts or styles (presentation attributes only, so an inline chart cannot
restyle the page around it, and a page with a strict Content-Security-Policy
draws it: no `style` attribute), and a `viewBox` with its natural size, so
`max-width: 100%; height: auto` on `svg.bp-chart` scales it with its container. Every label comes from user-supplied files, so all text is XML
escaped, and every bar carries a `<title>` tooltip with the exact value
because the drawn length and the rounded label are approximations.

Missing values (None, NaN, inf) draw no bar and read "—". The value axis
always includes zero, so bar lengths stay proportional to values and a
negative value grows leftwards from the zero line.
"""

from __future__ import annotations

from benchpack.results.metrics import METRICS

import hashlib
import math
import re
from dataclasses import dataclass, field
from typing import Iterable, Sequence
from xml.sax.saxutils import escape

from benchpack.lanes.aggregate import group_label
from benchpack.results.resultdir import field as row_field
from benchpack.measurement.stats import is_number, spread

# Okabe-Ito derived: distinguishable with the common colour-vision deficiencies.
PALETTE = ("#3b7dd8", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00", "#6b7780")
TEXT = "#1d2329"
MUTED = "#5b6670"
GRID = "#e3e8ec"
WHISKER = "#14324a"
REFERENCE = "#c0392b"
MISSING = "—"

FONT_PX = 13
CHAR_PX = 7.2  # average glyph width of a 13px system sans-serif; labels are cut to fit by this estimate
BOLD_CHAR_PX = CHAR_PX * 1.08  # titles are drawn bold: a little wider
LINE_HEIGHT_PX = 17  # one line of 13px text
ROW_PX = 24
BAR_PX = 15
HEADER_PX = 24
TITLE_PX = 26
LEGEND_PX = 20
AXIS_PX = 22
PAD = 8
VALUE_COLUMN_PX = 104

# Characters XML 1.0 forbids; a label with one would make the whole chart unparseable.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


@dataclass(frozen=True)
class Bar:
    label: str
    value: float | None
    low: float | None = None  # whisker start, e.g. the minimum over repetitions
    high: float | None = None  # whisker end, e.g. the maximum
    series: str | None = None  # legend entry; bars of one series share a colour
    detail: str = ""  # extra tooltip line, e.g. "3 ok rows"


@dataclass(frozen=True)
class Group:
    label: str
    bars: Sequence[Bar] = field(default_factory=tuple)


def bar_chart(
    bars: Iterable[Bar],
    *,
    title: str,
    unit: str = "",
    reference: float | None = None,
    reference_label: str = "reference",
    width: int = 640,
    chart_id: str | None = None,
    css_class: str = "",
) -> str:
    """Horizontal bars, one row each, with optional min–max whiskers and a reference line."""
    rows = [("bar", b) for b in bars]
    return _render(rows, title, unit, reference, reference_label, width, chart_id, css_class)


def grouped_bar_chart(
    groups: Iterable[Group],
    *,
    title: str,
    unit: str = "",
    reference: float | None = None,
    reference_label: str = "reference",
    width: int = 640,
    chart_id: str | None = None,
    css_class: str = "",
) -> str:
    """Bars in labelled groups (e.g. one group per case, one bar per run), coloured by series."""
    rows: list[tuple[str, object]] = []
    for g in groups:
        rows.append(("group", g.label))
        rows.extend(("bar", b) for b in g.bars)
    return _render(rows, title, unit, reference, reference_label, width, chart_id, css_class)


def grouped_records_chart(records: Iterable[Sequence], *, title: str, unit: str = "", width: int = 640) -> str:
    """A grouped chart straight from query rows: `(group, label, value[, low, high[, detail]])`.

    Consecutive records with the same group form one group, so ORDER BY the group first.
    `detail` is an extra tooltip line (e.g. the model).
    """
    groups: list[Group] = []
    for group, label, value, *rest in records:
        low, high, detail = (list(rest) + [None, None, None])[:3]
        if not groups or groups[-1].label != group:
            groups.append(Group(str(group), []))
        groups[-1].bars.append(Bar(str(label), value, low, high, detail=str(detail or "")))
    return grouped_bar_chart(groups, title=title, unit=unit, width=width)


def case_spread_bars(rows: Iterable[dict], path: str, series: str | None = None) -> list[Bar]:
    """One bar per case and lane level (first-appearance order): median of `path` over ok rows,
    min–max whiskers. Lane rows get their own bar (`short @depth=4096`,
    benchpack.lanes.aggregate.group_label), as the table beside the chart has its own row: a chart
    that pooled them into the plain case drew a different number from the table (issue 32 item 4).

    `rows` are run.jsonl rows; `path` is a dotted field such as "timing.ttft_s", or the
    name of a figure of benchpack.results.metrics ("decode_rate": 1/tpot_s).
    A case whose ok rows all lack the value (or that has no ok row) keeps its
    row with no bar, so a reader sees that it was run.
    """
    values: dict[str, list] = {}
    for row in rows:
        if not isinstance(row, dict) or not isinstance(row.get("case"), str):
            continue
        case = group_label(row)
        bucket = values.setdefault(case, [])
        if row.get("ok") is True:
            bucket.append(METRICS[path].value(row) if path in METRICS else row_field(row, path))
    bars = []
    for case, found in values.items():
        s = spread(found)
        if s is None:
            bars.append(Bar(case, None, series=series, detail=f"{len(found)} ok rows, none with {path}"))
            continue
        whiskers = (s.min, s.max) if s.count > 1 else (None, None)
        bars.append(Bar(case, s.median, *whiskers, series=series, detail=f"median of {s.count} ok rows"))
    return bars


def format_value(value: float | None) -> str:
    """Short human label: four significant digits, thousands grouped, "—" when missing."""
    if not is_number(value):
        return MISSING
    if value == 0:
        return "0"
    if abs(value) >= 10000:
        return f"{value:,.0f}"
    return f"{value:.4g}"


def exact_value(value: float | None) -> str:
    if not is_number(value):
        return "no value"
    return repr(value) if isinstance(value, float) else str(value)


def nice_ticks(low: float, high: float, target: int = 5) -> list[float]:
    """Round tick positions (1, 2 or 5 × 10^k apart) covering [low, high]."""
    if high <= low:
        high = low + 1
    raw = (high - low) / target
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw)
    first = math.floor(low / step + 1e-9)
    last = math.ceil(high / step - 1e-9)
    # Rounding to the step's own precision keeps 0.1 + 0.2 from labelling a tick 0.30000000000000004.
    digits = max(0, -math.floor(math.log10(step)) + 1)
    return [round(i * step, digits) for i in range(first, last + 1)]


def _text(value: object) -> str:
    return escape(_NOT_XML.sub("\ufffd", str(value)))


def _attr(value: object) -> str:
    return escape(_NOT_XML.sub("\ufffd", str(value)), {'"': "&quot;"})


def _truncate(label: str, max_chars: int) -> str:
    """Cut from the middle: run labels and model names differ at both ends (date … suffix)."""
    if len(label) <= max_chars:
        return label
    keep = max(1, max_chars - 1)
    head = (keep + 1) // 2 + keep // 6
    return label[:head] + "…" + label[len(label) - (keep - head):] if keep > head else label[:keep] + "…"


def _with_unit(text: str, unit: str) -> str:
    return f"{text} {unit}" if unit and text != MISSING else text


def _tooltip(bar: Bar, unit: str) -> str:
    lines = [f"{bar.label}: {_with_unit(exact_value(bar.value), unit) if is_number(bar.value) else 'no value'}"]
    if bar.series:
        lines.append(bar.series)
    if is_number(bar.low) and is_number(bar.high):
        lines.append(f"min {exact_value(bar.low)}, max {exact_value(bar.high)}")
    if bar.detail:
        lines.append(bar.detail)
    return "\n".join(lines)


def _domain(bars: list[Bar], reference: float | None) -> list[float]:
    values = [0.0]
    for b in bars:
        values += [v for v in (b.value, b.low, b.high) if is_number(v)]
    if is_number(reference):
        values.append(reference)
    ticks = nice_ticks(min(values), max(values))
    if not all(is_number(t) for t in ticks):  # values near a double's limit: round ticks overflow
        return [float(min(values)), float(max(values))]
    return ticks


def _render(rows, title, unit, reference, reference_label, width, chart_id, css_class="") -> str:
    bars = [item for kind, item in rows if kind == "bar"]
    series = list(dict.fromkeys(b.series for b in bars if b.series))
    colour = {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(series)}
    has_reference = is_number(reference)
    ident = chart_id or "bpchart-" + hashlib.sha1(repr((title, unit, rows, reference, width)).encode()).hexdigest()[:10]

    # The label column fits the longest label, up to 30% of the width (longer ones are cut) — 40% on a
    # phone's narrow drawing, where 30% would leave a dozen characters. A PAD of slack: CHAR_PX is an average,
    # and a label of digits and "@" (`short @depth=1024`) ran a pixel past the left edge in Chromium.
    longest = max((len(b.label) for b in bars), default=0)
    label_px = math.ceil(min(width * (0.3 if width >= 480 else 0.4), max(64, longest * CHAR_PX + 3 * PAD)))
    max_chars = int((label_px - 2 * PAD) / CHAR_PX)
    plot_x = label_px
    plot_w = width - label_px - VALUE_COLUMN_PX
    # The title wraps to the width (issue 32 item 7: on a phone it ran past the chart's edge).
    title_lines = _wrap(title, int((width - 2 * PAD) / BOLD_CHAR_PX))
    title_px = TITLE_PX + (len(title_lines) - 1) * LINE_HEIGHT_PX
    legend, legend_lines = _legend(series, colour, has_reference, reference, reference_label, unit, width, title_px)
    top = title_px + legend_lines * LEGEND_PX
    body_h = sum(ROW_PX if kind == "bar" else HEADER_PX for kind, _ in rows) or ROW_PX
    height = top + body_h + AXIS_PX + PAD

    ticks = _domain(bars, reference)
    lo, hi = ticks[0], ticks[-1]

    def x(v: float) -> float:
        return round(plot_x + (v - lo) / (hi - lo) * plot_w, 2)

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="{_attr(("bp-chart " + css_class).strip())}" '
        f'viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" '
        f'aria-labelledby="{ident}-t {ident}-d" font-family="system-ui,-apple-system,Segoe UI,sans-serif" '
        f'font-size="{FONT_PX}" fill="{TEXT}">',
        f'<title id="{ident}-t">{_text(title)}</title>',
        f'<desc id="{ident}-d">{_text(_description(rows, unit, reference, reference_label))}</desc>',
    ]
    out += [f'<text x="{PAD}" y="{17 + i * LINE_HEIGHT_PX}" font-size="13" font-weight="600">{_text(line)}</text>'
            for i, line in enumerate(title_lines)]
    out += legend

    plot_top, plot_bottom = top, top + body_h
    for t in ticks:
        tx = x(t)
        stroke = MUTED if t == 0 else GRID
        out.append(f'<line class="bp-tick" x1="{tx}" y1="{plot_top}" x2="{tx}" y2="{plot_bottom}" stroke="{stroke}" stroke-width="1"/>')
        out.append(f'<text x="{tx}" y="{plot_bottom + 15}" text-anchor="middle" fill="{MUTED}">{_text(format_value(t))}</text>')

    y = plot_top
    if not rows:
        out.append(f'<text x="{plot_x + PAD}" y="{y + 15}" fill="{MUTED}">no data</text>')
    for kind, item in rows:
        if kind == "group":
            out.append(f'<text class="bp-group" x="{PAD}" y="{y + 15}" font-weight="600">{_text(_truncate(item, int((width - 2 * PAD) / CHAR_PX)))}'
                       f'<title>{_text(item)}</title></text>')
            y += HEADER_PX
            continue
        out.append(_bar_row(item, y, x, lo, label_px, max_chars, plot_x + plot_w, unit, colour))
        y += ROW_PX

    if has_reference:
        rx = x(reference)
        out.append(f'<line class="bp-ref" x1="{rx}" y1="{plot_top - 4}" x2="{rx}" y2="{plot_bottom}" stroke="{REFERENCE}" '
                   f'stroke-width="1.5" stroke-dasharray="4 3"><title>{_text(reference_label)}: '
                   f'{_text(_with_unit(exact_value(reference), unit))}</title></line>')
    out.append("</svg>")
    return "\n".join(out)


def _bar_row(bar: Bar, y: float, x, lo: float, label_px: int, max_chars: int, value_x: float, unit: str, colour) -> str:
    mid = y + ROW_PX / 2
    parts = [f'<g class="bp-row"><title>{_text(_tooltip(bar, unit))}</title>']
    # An invisible full-row target, so the tooltip shows anywhere on the row, including on a missing value.
    parts.append(f'<rect x="0" y="{y}" width="{value_x + VALUE_COLUMN_PX}" height="{ROW_PX}" fill="transparent"/>')
    parts.append(f'<text class="bp-label" x="{label_px - PAD}" y="{mid + 4}" text-anchor="end">{_text(_truncate(bar.label, max_chars))}</text>')
    if is_number(bar.value):
        zero = x(max(lo, 0.0))
        end = x(bar.value)
        fill = colour.get(bar.series, PALETTE[0])
        parts.append(f'<rect class="bp-bar" x="{min(zero, end)}" y="{mid - BAR_PX / 2}" width="{round(abs(end - zero), 2)}" '
                     f'height="{BAR_PX}" fill="{fill}" rx="2"/>')
    if is_number(bar.low) and is_number(bar.high):
        x1, x2 = x(bar.low), x(bar.high)
        parts.append(f'<path class="bp-whisker" d="M{x1} {mid}H{x2}M{x1} {mid - 5}V{mid + 5}M{x2} {mid - 5}V{mid + 5}" '
                     f'stroke="{WHISKER}" stroke-width="1.5" fill="none"/>')
    shown = _with_unit(format_value(bar.value), unit) if is_number(bar.value) else MISSING
    parts.append(f'<text class="bp-value" x="{value_x + PAD}" y="{mid + 4}">{_text(shown)}</text>')
    parts.append("</g>")
    return "".join(parts)


def _legend(series, colour, has_reference, reference, reference_label, unit, width,
            title_px: int = TITLE_PX) -> tuple[list[str], int]:
    """Legend entries left to right, wrapping onto new lines; returns (elements, lines used)."""
    entries = []  # (advance width, svg at origin 0,0)
    for name in series:
        label = _truncate(name, 40)
        entries.append((14 + len(label) * CHAR_PX + 16,
                        f'<rect x="0" y="0" width="10" height="10" fill="{colour[name]}" rx="2"/>'
                        f'<text x="14" y="9" fill="{MUTED}">{_text(label)}<title>{_text(name)}</title></text>'))
    if has_reference:
        text = _truncate(f"{reference_label}: {_with_unit(format_value(reference), unit)}", 60)
        entries.append((18 + len(text) * CHAR_PX + 16,
                        f'<line x1="0" y1="5" x2="14" y2="5" stroke="{REFERENCE}" stroke-width="1.5" '
                        f'stroke-dasharray="4 3"/><text x="18" y="9" fill="{MUTED}">{_text(text)}</text>'))
    out, lx, line = [], PAD, 0
    for advance, svg in entries:
        if lx > PAD and lx + advance > width:
            lx, line = PAD, line + 1
        out.append(f'<g class="bp-legend" transform="translate({round(lx, 1)} {title_px + 4 + line * LEGEND_PX})">{svg}</g>')
        lx += advance
    return out, (line + 1 if entries else 0)


def _description(rows, unit: str, reference, reference_label: str) -> str:
    """The chart as one sentence per row, for screen readers (role="img" hides the children)."""
    parts, group = [], None
    for kind, item in rows:
        if kind == "group":
            group = item
            continue
        name = " · ".join(p for p in (group, item.label, item.series) if p)
        text = f"{name}: {_with_unit(format_value(item.value), unit)}"
        if is_number(item.low) and is_number(item.high):
            text += f" (min {format_value(item.low)}, max {format_value(item.high)})"
        parts.append(text)
    if is_number(reference):
        parts.append(f"{reference_label}: {_with_unit(format_value(reference), unit)}")
    return "; ".join(parts) if parts else "no data"


# ---- line charts: a rate against a condition (the depth lane) ----------------------

LINE_PLOT_H = 200
LINE_LEFT_MIN_PX = 32
LEGEND_SWATCH_PX = 16
LEGEND_LINES = 3  # a legend entry wraps onto at most this many lines; the rest is cut (its tooltip is whole)
# The width a chart is drawn at for a phone: a 390 px screen less the page's margins (static/benchpack/site.css,
# `main` padding .8rem each side), so one SVG unit is about one CSS pixel and 13 px text stays 13 px.
PHONE_WIDTH = 360


def _wrap(text: str, max_chars: int, max_lines: int | None = None) -> list[str]:
    """Lines of at most `max_chars`, broken at spaces (a " · " stays with the word before it); a word longer
    than a line breaks after a "+" or "/" (hardware classes), else where it must. Past `max_lines` the last
    line ends in "…"."""
    max_chars = max(4, max_chars)
    pieces: list[tuple[str, str]] = []  # (text, what joins it to the piece before on one line)
    for number, word in enumerate(text.replace(" · ", "\u00a0· ").split(" ")):
        word = word.replace("\u00a0", " ")
        parts = [p for p in re.split(r"(?<=[+/])", word) if p] if len(word) > max_chars else [word]
        joiner = " " if number else ""
        for part in parts:
            while True:
                pieces.append((part[:max_chars], joiner))
                joiner, part = "", part[max_chars:]
                if not part:
                    break
    lines: list[str] = []
    line = ""
    for piece, joiner in pieces:
        candidate = line + joiner + piece if line else piece
        if len(candidate) <= max_chars:
            line = candidate
        else:
            lines.append(line)
            line = piece
    lines.append(line)
    if max_lines is not None and len(lines) > max_lines:
        kept = lines[:max_lines]
        kept[-1] = kept[-1][:max_chars - 1] + "…"
        return kept
    return lines


def _compact(value: float) -> str:
    """A depth that does not fit its slot: 4096 -> "4k", 32768 -> "32k", 1500 -> "1.5k"."""
    if abs(value) >= 1024 and value % 1024 == 0:
        return f"{value / 1024:g}k"
    if abs(value) >= 1000:
        return f"{value / 1000:.3g}k"
    return format_value(value)


@dataclass(frozen=True)
class Series:
    label: str
    points: Sequence[tuple[float, float | None]]  # (x, y); y None: no value at that x (e.g. a cached depth)


def line_chart(series: Iterable[Series], *, title: str, x_label: str, unit: str = "", width: int = 640,
               chart_id: str | None = None, y_label: str = "", css_class: str = "") -> str:
    """One line per series over categorical x values (e.g. context depths 0, 1k, 4k, 32k: equally spaced, so
    small depths stay readable), y from zero. A missing y breaks the line and draws no marker.

    Every text fits the `width` it is drawn at (issue 32 item 7: at 390 px legends and the y axis were cut
    off): the title wraps, the y axis is named with its unit above the plot ("decode rate, tok/s"), depth
    ticks shorten to "4k" when their slot is narrow, and the legend sits below the plot, one entry a line,
    each wrapping. `css_class` is added to the root's class (e.g. "bp-fitted": the page keeps its 13 px)."""
    series = list(series)
    xs = sorted({x for s in series for x, _ in s.points})
    values = [y for s in series for _, y in s.points if is_number(y)]
    ticks = nice_ticks(0.0, max(values) if values else 1.0)
    hi = ticks[-1] or 1.0
    colour = {s.label: PALETTE[i % len(PALETTE)] for i, s in enumerate(series)}
    ident = chart_id or "bpline-" + hashlib.sha1(repr((title, unit, series, width)).encode()).hexdigest()[:10]
    inner = width - 2 * PAD

    title_lines = _wrap(title, int(inner / BOLD_CHAR_PX))
    axis_name = ", ".join(p for p in (y_label, unit) if p)
    axis_lines = _wrap(axis_name, int(inner / CHAR_PX)) if axis_name else []
    tick_texts = [format_value(t) for t in ticks]
    plot_x = max(LINE_LEFT_MIN_PX, math.ceil(max(len(t) for t in tick_texts) * CHAR_PX + 2 * PAD))
    plot_w = width - plot_x - 2 * PAD
    slot = plot_w / max(len(xs), 1)
    x_texts = [format_value(x) for x in xs]
    if any(len(t) * CHAR_PX > slot - 4 for t in x_texts):
        x_texts = [_compact(x) for x in xs]
    x_label_lines = _wrap(x_label, int(inner / CHAR_PX))
    legend = [(s, _wrap(s.label, int((inner - LEGEND_SWATCH_PX) / CHAR_PX), LEGEND_LINES)) for s in series]

    top = PAD + len(title_lines) * LINE_HEIGHT_PX + PAD + len(axis_lines) * LINE_HEIGHT_PX + PAD
    plot_bottom = top + LINE_PLOT_H
    x_label_y = plot_bottom + AXIS_PX + LINE_HEIGHT_PX - 4
    legend_top = x_label_y + (len(x_label_lines) - 1) * LINE_HEIGHT_PX + PAD + 4
    height = legend_top + sum(len(lines) * LINE_HEIGHT_PX + 4 for _, lines in legend) + PAD

    def px(x: float) -> float:
        index = xs.index(x)
        return round(plot_x + (index + 0.5) * slot, 2)

    def py(y: float) -> float:
        return round(top + LINE_PLOT_H - y / hi * LINE_PLOT_H, 2)

    described = "; ".join(f"{s.label}: " + ", ".join(f"{format_value(x)} → {_with_unit(format_value(y), unit)}"
                                                      for x, y in s.points) for s in series)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="{_attr(("bp-chart " + css_class).strip())}" '
        f'viewBox="0 0 {width} {height}" width="{width}" '
        f'height="{height}" role="img" aria-labelledby="{ident}-t {ident}-d" '
        f'font-family="system-ui,-apple-system,Segoe UI,sans-serif" font-size="{FONT_PX}" fill="{TEXT}">',
        f'<title id="{ident}-t">{_text(title)}</title>',
        f'<desc id="{ident}-d">{_text(described or "no data")}</desc>',
    ]
    y = PAD
    for line in title_lines:
        y += LINE_HEIGHT_PX
        out.append(f'<text class="bp-title" x="{PAD}" y="{y - 4}" font-size="13" font-weight="600">{_text(line)}</text>')
    y += PAD
    for line in axis_lines:
        y += LINE_HEIGHT_PX
        out.append(f'<text class="bp-axis-label" x="{PAD}" y="{y - 4}" fill="{MUTED}">{_text(line)}</text>')
    for t, label in zip(ticks, tick_texts):
        ty = py(t)
        out.append(f'<line class="bp-tick" x1="{plot_x}" y1="{ty}" x2="{plot_x + plot_w}" y2="{ty}" '
                   f'stroke="{MUTED if t == 0 else GRID}" stroke-width="1"/>')
        out.append(f'<text x="{plot_x - 6}" y="{ty + 4}" text-anchor="end" fill="{MUTED}">{_text(label)}</text>')
    for x, label in zip(xs, x_texts):
        out.append(f'<text x="{px(x)}" y="{plot_bottom + 15}" text-anchor="middle" fill="{MUTED}">'
                   f'{_text(label)}<title>{_text(format_value(x))}</title></text>')
    for i, line in enumerate(x_label_lines):
        out.append(f'<text class="bp-axis-label" x="{round(plot_x + plot_w / 2, 2)}" y="{x_label_y + i * LINE_HEIGHT_PX}" '
                   f'text-anchor="middle" fill="{MUTED}">{_text(line)}</text>')
    if not values:
        out.append(f'<text x="{plot_x + PAD}" y="{top + LINE_PLOT_H / 2}" fill="{MUTED}">no data</text>')
    for s in series:
        segment: list[str] = []
        segments = []
        for x, y_value in sorted(s.points, key=lambda p: p[0]):
            if is_number(y_value):
                segment.append(f"{px(x)},{py(y_value)}")
            elif segment:
                segments.append(segment)
                segment = []
        if segment:
            segments.append(segment)
        for part in segments:
            if len(part) > 1:
                out.append(f'<polyline fill="none" stroke="{colour[s.label]}" stroke-width="2" points="{" ".join(part)}"/>')
        for x, y_value in s.points:
            if is_number(y_value):
                out.append(f'<circle cx="{px(x)}" cy="{py(y_value)}" r="3.5" fill="{colour[s.label]}">'
                           f'<title>{_text(s.label)} at {_text(format_value(x))}: '
                           f'{_text(_with_unit(exact_value(y_value), unit))}</title></circle>')
    y = legend_top
    for s, lines in legend:
        out.append(f'<g class="bp-legend"><title>{_text(s.label)}</title>'
                   f'<rect x="{PAD}" y="{y + 3}" width="10" height="10" fill="{colour[s.label]}"/>')
        for line in lines:
            y += LINE_HEIGHT_PX
            out.append(f'<text x="{PAD + LEGEND_SWATCH_PX}" y="{y - 4}">{_text(line)}</text>')
        out.append("</g>")
        y += 4
    out.append("</svg>")
    return "\n".join(out)
