import json
import statistics
import math
import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchpack.reporting.charts import (
    MISSING,
    Bar,
    Group,
    bar_chart,
    case_spread_bars,
    format_value,
    grouped_bar_chart,
    grouped_records_chart,
    nice_ticks,
)

NS = {"s": "http://www.w3.org/2000/svg"}


def parse(svg: str) -> ET.Element:
    return ET.fromstring(svg)


def rows(root):
    return root.findall(".//s:g[@class='bp-row']", NS)


def bar_of(row):
    return row.find("s:rect[@class='bp-bar']", NS)


def value_of(row) -> str:
    return row.find("s:text[@class='bp-value']", NS).text


def zero_x(root) -> float:
    ticks = root.findall(".//s:line[@class='bp-tick']", NS)
    labels = [t for t in root.findall("s:text", NS) if t.get("text-anchor") == "middle"]
    return next(float(line.get("x1")) for line, label in zip(ticks, labels) if label.text == "0")


def bar_extent(row, zero: float) -> float:
    """Signed length of a bar from the zero line, in viewBox units."""
    rect = bar_of(row)
    x, width = float(rect.get("x")), float(rect.get("width"))
    return -width if x < zero - 1e-6 else width


def test_it_draws_bars_proportional_to_their_values():
    root = parse(bar_chart([Bar("a", 100.0), Bar("b", 250.0), Bar("c", 40.0)], title="t"))
    widths = [float(bar_of(r).get("width")) for r in rows(root)]
    assert widths[0] / widths[1] == pytest.approx(100 / 250, rel=1e-3)
    assert widths[2] / widths[1] == pytest.approx(40 / 250, rel=1e-3)


@given(st.lists(st.floats(min_value=0.001, max_value=1e6), min_size=1, max_size=12))
def test_it_keeps_proportions_and_parses_for_any_positive_values(values):
    root = parse(bar_chart([Bar(f"c{i}", v) for i, v in enumerate(values)], title="t"))
    widths = [float(bar_of(r).get("width")) for r in rows(root)]
    biggest = max(values)
    for value, width in zip(values, widths):
        assert width == pytest.approx(value / biggest * max(widths), rel=1e-3, abs=0.02)


def test_it_names_the_chart_for_assistive_technology_and_lists_every_value():
    svg = bar_chart([Bar("short", 411.8203), Bar("long", 92.5)], title="Decode speed", unit="tok/s")
    root = parse(svg)
    assert root.get("role") == "img"
    title_id, desc_id = root.get("aria-labelledby").split()
    assert root.find(f"s:title[@id='{title_id}']", NS).text == "Decode speed"
    desc = root.find(f"s:desc[@id='{desc_id}']", NS).text
    assert "short: 411.8 tok/s" in desc and "long: 92.5 tok/s" in desc
    assert root.get("viewBox").startswith("0 0 ")


def test_it_gives_each_bar_a_tooltip_with_the_exact_value_and_spread():
    root = parse(bar_chart([Bar("short", 411.8203, 400.125, 420.5, detail="3 ok rows")], title="t", unit="tok/s"))
    tooltip = rows(root)[0].find("s:title", NS).text
    assert "411.8203 tok/s" in tooltip and "min 400.125, max 420.5" in tooltip and "3 ok rows" in tooltip
    assert value_of(rows(root)[0]) == "411.8 tok/s"


def test_it_escapes_markup_in_labels_titles_and_units():
    hostile = '<script>alert("x")</script>&'
    svg = bar_chart([Bar(hostile, 1.0, series=hostile)], title=hostile, unit=hostile, reference=0.5, reference_label=hostile)
    assert "<script" not in svg
    root = parse(svg)
    assert root.findall(".//s:script", NS) == [] and root.findall(".//script") == []
    assert hostile in rows(root)[0].find("s:title", NS).text
    assert root.find("s:title", NS).text == hostile


def test_it_survives_control_characters_in_labels():
    root = parse(bar_chart([Bar("bad\x00\x1bname", 2.0)], title="t\x07"))
    assert rows(root)[0].find("s:text[@class='bp-label']", NS).text == "bad\ufffd\ufffdname"


def test_it_draws_no_bar_and_a_dash_for_missing_values():
    root = parse(bar_chart([Bar("ran", 5.0), Bar("none", None), Bar("nan", math.nan), Bar("inf", math.inf)], title="t"))
    drawn = rows(root)
    assert len(drawn) == 4
    assert bar_of(drawn[0]) is not None
    for row in drawn[1:]:
        assert bar_of(row) is None
        assert value_of(row) == MISSING
        assert "no value" in row.find("s:title", NS).text


def test_it_grows_negative_bars_left_of_the_zero_line():
    root = parse(bar_chart([Bar("neg", -3.0), Bar("pos", 6.0), Bar("zero", 0)], title="t"))
    zero = zero_x(root)
    neg, pos, nil = rows(root)
    assert bar_extent(neg, zero) == pytest.approx(-0.5 * bar_extent(pos, zero), rel=1e-3)
    assert float(bar_of(nil).get("width")) == 0
    assert value_of(nil) == "0"


def test_it_draws_a_chart_of_zeros_without_dividing_by_zero():
    root = parse(bar_chart([Bar("a", 0), Bar("b", 0.0)], title="t"))
    assert [value_of(r) for r in rows(root)] == ["0", "0"]


def test_it_draws_one_item_and_an_empty_chart():
    assert len(rows(parse(bar_chart([Bar("only", 3.0)], title="t")))) == 1
    empty = parse(bar_chart([], title="t"))
    assert rows(empty) == [] and "no data" in ET.tostring(empty, encoding="unicode")


def test_it_grows_taller_with_more_items():
    def height(n):
        return float(parse(bar_chart([Bar(f"c{i}", i + 1.0) for i in range(n)], title="t")).get("viewBox").split()[3])

    assert height(100) - height(10) == pytest.approx(9 * (height(20) - height(10)))
    assert len(rows(parse(bar_chart([Bar(f"c{i}", i) for i in range(100)], title="t")))) == 100


def test_it_truncates_long_labels_and_keeps_the_full_text_in_the_tooltip():
    label = "a-very-long-case-name-" * 6
    row = rows(parse(bar_chart([Bar(label, 1.0)], title="t")))[0]
    shown = row.find("s:text[@class='bp-label']", NS).text
    head, tail = shown.split("…")
    assert head and tail and label.startswith(head) and label.endswith(tail) and len(shown) < len(label)
    assert label in row.find("s:title", NS).text


def test_it_spans_whiskers_from_min_to_max():
    root = parse(bar_chart([Bar("a", 10.0, 5.0, 20.0)], title="t"))
    zero = zero_x(root)
    row = rows(root)[0]
    d = row.find("s:path[@class='bp-whisker']", NS).get("d")
    start, end = float(d[1:].split()[0]), float(d.split("H")[1].split("M")[0])
    length = bar_extent(row, zero)
    assert (start - zero) / length == pytest.approx(0.5, rel=1e-3)
    assert (end - zero) / length == pytest.approx(2.0, rel=1e-3)


def test_it_places_the_reference_marker_at_its_value():
    root = parse(bar_chart([Bar("a", 400.0)], title="t", reference=300.0, reference_label="approved median", unit="tok/s"))
    zero = zero_x(root)
    ref = root.find("s:line[@class='bp-ref']", NS)
    assert (float(ref.get("x1")) - zero) / bar_extent(rows(root)[0], zero) == pytest.approx(0.75, rel=1e-3)
    assert "approved median: 300.0 tok/s" in ref.find("s:title", NS).text


def test_it_colours_grouped_bars_by_series_with_a_legend():
    svg = grouped_bar_chart(
        [
            Group("short", [Bar("run-a", 411.0, series="this submission"), Bar("m #4", 380.0, series="approved")]),
            Group("long", [Bar("run-a", None, series="this submission"), Bar("m #4", 90.0, series="approved")]),
        ],
        title="t",
    )
    root = parse(svg)
    assert [g.text for g in root.findall("s:text[@class='bp-group']", NS)] == ["short", "long"]
    fills = [bar_of(r).get("fill") if bar_of(r) is not None else None for r in rows(root)]
    assert fills[0] != fills[1] and fills[1] == fills[3] and fills[2] is None
    legend = [t.text for t in root.findall("s:g[@class='bp-legend']/s:text", NS)]
    assert legend == ["this submission", "approved"]


def test_it_wraps_a_long_legend_inside_the_chart_width():
    def chart(n):
        return parse(grouped_bar_chart([Group("case", [Bar(f"run {i}", 1.0, series=f"series number {i}") for i in range(n)])], title="t", width=400))

    many = chart(12)
    offsets = [g.get("transform") for g in many.findall("s:g[@class='bp-legend']", NS)]
    xs = [float(t.split("(")[1].split()[0]) for t in offsets]
    assert len(xs) == 12 and all(x + 40 <= 400 for x in xs)
    assert len(set(t.split()[1] for t in offsets)) > 1  # more than one legend line
    assert float(many.get("viewBox").split()[3]) > float(chart(1).get("viewBox").split()[3]) + 11 * 24


def test_it_groups_query_records_in_order():
    root = parse(grouped_records_chart(
        [("pack · short", "run-a", 10.0, 9.0, 11.0, "model-x"), ("pack · short", "run-b", None), ("pack · long", "run-a", 3.0)],
        title="t",
    ))
    assert [g.text for g in root.findall("s:text[@class='bp-group']", NS)] == ["pack · short", "pack · long"]
    labels = [r.find("s:text[@class='bp-label']", NS).text for r in rows(root)]
    assert labels == ["run-a", "run-b", "run-a"]
    assert len(root.findall(".//s:path[@class='bp-whisker']", NS)) == 1
    assert rows(root)[0].find("s:title", NS).text.endswith("min 9.0, max 11.0\nmodel-x")


def test_it_shows_labels_that_fit_in_full():
    label = "medium-prompt-long-name"
    row = rows(parse(bar_chart([Bar(label, 1.0), Bar("x", 2.0)], title="t")))[0]
    assert row.find("s:text[@class='bp-label']", NS).text == label


@pytest.mark.parametrize("low, high", [(0, 420), (0, 0.0123), (-3.2, 5.5), (0, 1e6), (0, 0)])
def test_it_picks_round_ticks_covering_the_range(low, high):
    ticks = nice_ticks(low, high)
    assert ticks[0] <= low and ticks[-1] >= high and 3 <= len(ticks) <= 8
    assert all(len(format_value(t)) <= 9 for t in ticks)


def test_it_formats_values_short_and_missing_as_a_dash():
    assert [format_value(v) for v in (None, 0, 411.8203, 0.012345, 12345.6, True)] == [MISSING, "0", "411.8", "0.01235", "12,346", MISSING]


def test_it_summarises_each_case_over_ok_rows_only():
    def row(case, ok, tps):
        return {"case": case, "ok": ok, "timing": {"decode_tps": tps}}

    bars = case_spread_bars(
        [row("short", True, 10.0), row("long", True, 3.0), row("short", True, 30.0), row("short", True, 20.0),
         row("short", False, 999.0), row("broken", False, None), {"case": "old", "ok": True, "timing": {}}],
        "timing.decode_tps",
    )
    assert [(b.label, b.value, b.low, b.high) for b in bars] == [
        ("short", 20.0, 10.0, 30.0), ("long", 3.0, None, None), ("broken", None, None, None), ("old", None, None, None),
    ]


def test_lane_rows_get_their_own_bar_not_the_plain_cases():
    """Issue 32 item 4: the run page's chart pooled depth and concurrency rows into the plain case's bar,
    so the chart said 0.0205 s where the table said 0.0223 s."""
    def row(ttft, **lane):
        return {"case": "short", "ok": True, "timing": {"ttft_s": ttft}, **lane}

    bars = case_spread_bars([row(0.02), row(0.02), row(0.9, depth_tokens=4096), row(0.05, concurrency=4)],
                            "timing.ttft_s")
    assert [(b.label, b.value) for b in bars] == [("short", 0.02), ("short @depth=4096", 0.9),
                                                  ("short @concurrency=4", 0.05)]


def test_it_charts_every_case_of_the_registry_site_with_spread(tmp_path):
    from benchpack.registry.importer import RunSource, import_result_dirs
    from benchpack.registry.schema import open_read_only
    from benchpack.registry.site import write_site

    from tests.data_paths import REAL_RESULTS as real
    names = ["2026-04-29-llama-server-runtime", "2026-04-28-mlx-lm-runtime"]
    expected = None
    for name in names:
        shutil.copytree(real / name, tmp_path / name)
        # The seed's rows predate tpot_s; give them one (the gaps after the first token, evenly spread) so
        # the decode chart (1/tpot_s, benchpack.results.metrics) has values to draw.
        run_file = tmp_path / name / "run.jsonl"
        seeded = [json.loads(line) for line in run_file.read_text().splitlines() if line.strip()]
        for row in seeded:
            t = row["timing"]
            t["tpot_s"] = (t["wall_s"] - t["ttft_s"]) / (row["tokens"]["output"] - 1)
        run_file.write_text("".join(json.dumps(r) + "\n" for r in seeded))
        if name == names[0]:
            expected = statistics.median(1 / r["timing"]["tpot_s"] for r in seeded if r["case"] == "long")
    db = tmp_path / "r.sqlite"
    import_result_dirs(db, [RunSource(tmp_path / n) for n in names])
    write_site(open_read_only(db), tmp_path / "site")
    index = (tmp_path / "site" / "index.html").read_text()
    svg, ttft_svg = re.findall(r"<svg\b.*?</svg>", index, flags=re.S)  # decode speed, then TTFT
    assert "time to first token" in ttft_svg and len(rows(parse(ttft_svg))) == 6
    root = parse(svg)
    assert [g.text for g in root.findall("s:text[@class='bp-group']", NS)] == [
        "runtime-sweep 0.1.0 · long", "runtime-sweep 0.1.0 · medium", "runtime-sweep 0.1.0 · short"]
    tips = [r.find("s:title", NS).text for r in rows(root)]
    assert len(tips) == 6 and len(root.findall(".//s:path[@class='bp-whisker']", NS)) == 6
    assert tips[0].startswith(f"2026-04-29-llama-server-runtime: {expected!r} tok/s"), tips[0]
