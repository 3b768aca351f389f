"""Issue 32 item 7, the scatter and timeline charts: drawn at a phone's width (360) and at 640, every text lies
inside the viewBox by the glyph-width estimate the chart lays itself out with (the same measure as
test_line_chart_fits), no two x tick labels overlap, and nothing is rotated (the estimate measures level text;
the rotated y label was what a phone cut off)."""

import itertools
import xml.etree.ElementTree as ET

import pytest

from benchpack.reporting.charts import PHONE_WIDTH
from benchpack.reporting.xy_charts import XYPoint, pareto_front, scatter_chart, timeline_chart
from tests.reporting.test_line_chart_fits import LONG_SYSTEM, NS, assert_fits, text_boxes

WIDTHS = [PHONE_WIDTH, 640]
HARDWARE = ["amd-ryzen-threadripper-pro-7995wx+2x-nvidia-geforce-rtx-4090+256gb", "apple-m5-max-64gb", "h100-80gb",
            "nvidia-geforce-rtx-4090-24gb+amd-ryzen-9-7950x+128gb", "rtx-3060-12gb", "intel-arc-a770", "cpu only"]
TITLE = "python-regression-fix 1.4.0: pass rate against the agent's decode rate over its turns, median per task"
START = 1_764_650_000.0  # 2025-12-02, a few minutes after 04:33 UTC


def scatter_points(systems: int, speed: float) -> list[XYPoint]:
    return [XYPoint(speed * (1 + n) / systems, (n % 4) / 3, f"{LONG_SYSTEM} #{n}", series=HARDWARE[n % len(HARDWARE)],
                    href=f"/runs/{n}/") for n in range(systems)]


def scatter(width: int, systems: int, speed: float) -> str:
    points = scatter_points(systems, speed)
    return scatter_chart(points, title=TITLE, x_label="agent decode rate", x_unit="tok/s", y_label="pass rate",
                         front=pareto_front(points), width=width, css_class="bp-fitted" if width == PHONE_WIDTH else "")


def timeline(width: int, span_s: float, runs: int, versions: int, value: float = 100.0) -> str:
    points = [XYPoint(START + span_s * n / max(runs - 1, 1), value * (1 - 0.3 * (n >= runs - 2)), f"run #{n}",
                      series=f"llama.cpp b{6300 + (n * versions) // runs} (Vulkan, {LONG_SYSTEM[:30]})",
                      flag="regression" if n == runs - 2 else "improvement" if n == 1 else "")
              for n in range(runs)]
    return timeline_chart(points, title="Decode rate (1/TPOT) over time: desktop-django-wrap · medium-context",
                          y_label="decode rate (1/TPOT)", y_unit="tok/s", width=width,
                          css_class="bp-fitted" if width == PHONE_WIDTH else "")


def x_tick_boxes(svg: str) -> list[tuple[str, float, float]]:
    ticks = {t.text for t in ET.fromstring(svg).iter(f"{NS}text") if t.get("class") == "bp-x-tick"}
    return sorted(((text, left, right) for text, left, _, right, _ in text_boxes(svg) if text in ticks),
                  key=lambda box: box[1])


def assert_laid_out(svg: str, width: int) -> ET.Element:
    root = assert_fits(svg)
    assert root.get("width") == str(width) and root.get("viewBox").split()[2] == str(width)
    assert not [t.text for t in root.iter(f"{NS}text") if "rotate" in (t.get("transform") or "")]
    ticks = x_tick_boxes(svg)
    assert len(ticks) >= 2, ticks
    overlapping = [(a, b) for a, b in itertools.pairwise(ticks) if b[1] < a[2]]
    assert not overlapping, overlapping
    return root


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("systems, speed", [(1, 35.0), (7, 129.0), (40, 12345.6), (3, 0.0004)])
def test_every_text_of_a_scatter_lies_inside_it(width, systems, speed):
    root = assert_laid_out(scatter(width, systems, speed), width)
    axis = [t.text for t in root.iter(f"{NS}text") if t.get("class") == "bp-axis-label"]
    assert axis[0] == "pass rate" and " ".join(axis[1:]) == "agent decode rate (tok/s)"
    legend = [t.text for t in root.iter(f"{NS}text") if t.get("class") == "bp-legend"]
    # every series is in the legend (wrapping onto more rows, long names cut in the middle), and the front
    front_drawn = len(pareto_front(scatter_points(systems, speed))) > 1
    assert len(legend) == min(systems, len(HARDWARE)) + front_drawn and ("Pareto front" in legend) == front_drawn
    assert all(len(t) * 7.2 <= width for t in legend)


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("span_s, runs", [(0, 1), (300, 6), (5 * 3600, 8), (30 * 3600, 9), (42 * 86400, 9),
                                          (800 * 86400, 30)])
def test_every_text_of_a_timeline_lies_inside_it(width, span_s, runs):
    root = assert_laid_out(timeline(width, span_s, runs, versions=3), width)
    title = " ".join(t.text for t in root.iter(f"{NS}text") if t.get("class") == "bp-title")
    assert title == "Decode rate (1/TPOT) over time: desktop-django-wrap · medium-context"


def test_a_phone_s_timeline_keeps_fewer_date_ticks_than_the_wide_one_and_both_name_the_weeks():
    wide, phone = (x_tick_boxes(timeline(width, 35 * 86400, 9, 2)) for width in (640, PHONE_WIDTH))
    assert 2 <= len(phone) < len(wide) <= 6
    assert all(len(text) == 10 and text.count("-") == 2 for text, _, _ in wide + phone)


def test_the_two_drawings_of_one_chart_have_ids_of_their_own():
    ids = [ET.fromstring(scatter(width, 7, 129.0)).find(f"{NS}title").get("id") for width in WIDTHS]
    assert len(set(ids)) == 2
    phone = ET.fromstring(scatter(PHONE_WIDTH, 7, 129.0))
    assert phone.get("class") == "bp-chart bp-xy bp-fitted"
