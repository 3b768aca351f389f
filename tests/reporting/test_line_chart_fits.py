"""Issue 32 item 7: on a 390 px phone the depth curves' legends and y-axis labels were cut off and had no
units. Every text of a line chart (and of the run page's bar charts) must lie inside its viewBox at the
width it is drawn at, by the same glyph-width estimate the chart lays itself out with."""

import re
import xml.etree.ElementTree as ET

import pytest

from benchpack.reporting.charts import (BOLD_CHAR_PX, CHAR_PX, FONT_PX, PHONE_WIDTH, Bar, Series, bar_chart,
                                       line_chart)

NS = "{http://www.w3.org/2000/svg}"
LONG_SYSTEM = ("llama-3.1-70b-instruct Q4_K_M · llama.cpp b4567 · "
               "amd-ryzen-threadripper-pro-7995wx+2x-nvidia-geforce-rtx-4090+256gb (demo data)")


def text_boxes(svg: str):
    """(text, left, top, right, bottom) of each drawn <text> (its <title> tooltip is not drawn), with the
    translate() of the groups around it."""
    root = ET.fromstring(svg)
    base = float(root.get("font-size"))

    def walk(element, dx, dy):
        found = re.fullmatch(r"translate\(([-\d.]+)[ ,]+([-\d.]+)\)", element.get("transform", ""))
        if found:
            dx, dy = dx + float(found.group(1)), dy + float(found.group(2))
        if element.tag == f"{NS}text":
            text = element.text or ""
            size = float(element.get("font-size", base))
            glyph = (BOLD_CHAR_PX if element.get("font-weight") == "600" else CHAR_PX) * size / FONT_PX
            width = len(text) * glyph
            x, y = float(element.get("x")) + dx, float(element.get("y")) + dy
            anchor = element.get("text-anchor", "start")
            left = x - width if anchor == "end" else x - width / 2 if anchor == "middle" else x
            yield text, left, y - 0.8 * size, left + width, y + 0.25 * size
        for child in element:
            yield from walk(child, dx, dy)

    yield from walk(root, 0.0, 0.0)


def assert_fits(svg: str) -> ET.Element:
    root = ET.fromstring(svg)
    _, _, width, height = (float(v) for v in root.get("viewBox").split())
    outside = [(text, round(left), round(top), round(right), round(bottom))
               for text, left, top, right, bottom in text_boxes(svg)
               if left < 0 or top < 0 or right > width or bottom > height]
    assert not outside, f"text past the {width:g}×{height:g} viewBox: {outside}"
    return root


def depth_series(systems: int, depths=(0, 512, 1024, 2048, 4096, 8192, 16384, 32768, 131072), scale=1.0):
    return [Series(f"{LONG_SYSTEM} #{n}" if n % 2 else f"system {n}",
                   [(d, scale * (900 - n * 40) / (1 + d / 8192) if d != 2048 else None) for d in depths])
            for n in range(systems)]


@pytest.mark.parametrize("width", [PHONE_WIDTH, 640])
@pytest.mark.parametrize("systems, scale", [(1, 1.0), (8, 1.0), (8, 5000.0), (3, 0.0004)])
def test_every_label_lies_inside_the_chart(width, systems, scale):
    svg = line_chart(depth_series(systems, scale=scale), width=width, unit="tok/s", y_label="decode",
                     title="Decode rate (1/TPOT), coding-agent-load 1.0.0 · fix-prerelease-order with a long name",
                     x_label="context depth (tokens)")
    root = assert_fits(svg)
    assert root.get("width") == str(width)


def test_the_y_axis_is_named_with_its_unit_and_the_legend_is_below_the_plot():
    svg = line_chart(depth_series(3), width=PHONE_WIDTH, unit="tok/s", y_label="prefill", title="Prefill rate",
                     x_label="context depth (tokens)")
    root = assert_fits(svg)
    axis = [t.text for t in root.iter(f"{NS}text") if t.get("class") == "bp-axis-label"]
    assert axis == ["prefill, tok/s", "context depth (tokens)"]
    plot_bottom = max(float(line.get("y1")) for line in root.iter(f"{NS}line"))
    legend = [t for g in root.iter(f"{NS}g") if g.get("class") == "bp-legend" for t in g.iter(f"{NS}text")]
    assert legend and all(float(t.get("y")) > plot_bottom for t in legend)
    # a long system label wraps onto more lines rather than being cut, and its tooltip keeps it whole
    first = next(g for g in root.iter(f"{NS}g") if g.get("class") == "bp-legend" and LONG_SYSTEM in
                 g.find(f"{NS}title").text)
    lines = [t.text for t in first.iter(f"{NS}text")]
    assert len(lines) >= 2 and " ".join(lines).replace("+ ", "+") .startswith("llama-3.1-70b-instruct Q4_K_M")


def test_depth_ticks_shorten_when_their_slot_is_narrow():
    svg = line_chart(depth_series(1), width=PHONE_WIDTH, unit="tok/s", title="t", x_label="depth")
    ticks = [t.text for t in ET.fromstring(svg).iter(f"{NS}text") if t.get("text-anchor") == "middle"
             and t.get("class") != "bp-axis-label"]
    assert ticks == ["0", "512", "1k", "2k", "4k", "8k", "16k", "32k", "128k"]
    wide = line_chart(depth_series(1, depths=(0, 4096, 32768)), width=640, unit="tok/s", title="t", x_label="depth")
    assert [t.text for t in ET.fromstring(wide).iter(f"{NS}text") if t.get("text-anchor") == "middle"][:3] == \
        ["0", "4096", "32,768"]


def test_an_empty_chart_fits_too():
    assert_fits(line_chart([], width=PHONE_WIDTH, title="nothing yet", x_label="depth", unit="tok/s"))


@pytest.mark.parametrize("width", [PHONE_WIDTH, 560])
def test_every_label_of_a_run_pages_bar_chart_lies_inside_it(width):
    bars = [Bar(f"short @depth={d}", 113.0 / (1 + d / 2048), 100.0 / (1 + d / 2048), 120.0 / (1 + d / 2048),
                series="this submission" if d % 1024 else "approved, same fingerprint")
            for d in (0, 512, 1024, 2048, 3072)]
    bars.append(Bar("fix-prerelease-order @concurrency=16 with a long case name", 12345.6, series="this submission"))
    svg = bar_chart(bars, title="Decode speed (1/TPOT) per case: median, min–max (higher is faster)", unit="tok/s",
                    width=width, reference=60.0, reference_label="approved median")
    assert_fits(svg)
