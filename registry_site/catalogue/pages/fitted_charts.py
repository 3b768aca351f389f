"""A line chart for the pages, drawn twice: at its desktop width and at a phone's (issue 32 item 7).

An SVG drawn 640 units wide shrinks to ~56 % on a 390 px phone, and the stylesheet's larger
text for phones then overflowed what the chart had laid out: depth-curve legends and axis
labels were cut off. Each copy is laid out for the width it is shown at
(benchpack.reporting.charts.PHONE_WIDTH), and static/benchpack/site.css shows one: `.chart-wide`
above 40rem, `.chart-phone` (class `bp-fitted`, kept at its own 13 px) below.
"""

from __future__ import annotations

from typing import Callable

from django.utils.safestring import SafeString, mark_safe

from benchpack.reporting.charts import PHONE_WIDTH

WIDE = 640
FITTED = "bp-fitted"


def at_both_widths(draw: Callable[[int, str], str]) -> SafeString:
    """`draw(width, css_class)` -> an escaped SVG string (benchpack.reporting.charts escapes every label)."""
    return pair(draw(WIDE, ""), draw(PHONE_WIDTH, FITTED))


def pair(wide: str, phone: str) -> SafeString:
    """The two drawings of one chart, `phone` drawn at PHONE_WIDTH with the class FITTED."""
    return mark_safe(f'<div class="chart-wide">{wide}</div>'  # noqa: S308 - escaped SVG from benchpack.reporting.charts
                     f'<div class="chart-phone">{phone}</div>')
