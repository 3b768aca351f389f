"""Scatter and timeline SVG charts: valid SVG, exact tooltips, Pareto front, nothing drawn at a fake zero."""

import xml.etree.ElementTree as ET

from benchpack.reporting.xy_charts import XYPoint, pareto_front, scatter_chart, timeline_chart

NS = {"s": "http://www.w3.org/2000/svg"}


def test_the_pareto_front_keeps_only_points_nothing_beats_on_both_axes():
    a, b, c, d = (XYPoint(10, 0.9, "a"), XYPoint(20, 0.5, "b"), XYPoint(15, 0.4, "c"), XYPoint(5, 0.9, "d"))
    assert pareto_front([a, b, c, d]) == [a, b]  # c loses to b on both; d ties a on y and is slower
    # lower-is-better x (wall time): the fastest wall time wins that axis
    assert pareto_front([a, b, c, d], x_higher_is_better=False) == [d]
    assert pareto_front([XYPoint(None, 1, "x"), a]) == [a]


def test_a_scatter_is_valid_svg_with_exact_tooltips_links_and_the_front_drawn():
    points = [XYPoint(10.123456, 0.9, "<model & co>", series="rtx", href="/runs/1/"),
              XYPoint(20, 0.5, "b", series="m5"), XYPoint(15, None, "no pass rate")]
    svg = scatter_chart(points, title="Pass rate vs speed", x_label="decode", y_label="pass rate", x_unit="tok/s",
                        front=pareto_front(points))
    root = ET.fromstring(svg)
    tips = [g.find("s:title", NS).text for g in root.iter("{http://www.w3.org/2000/svg}g")]
    assert len(tips) == 2 and "<model & co>" in tips[0] and "10.123456 tok/s" in tips[0]
    assert "Pareto front" in tips[0]
    assert root.find(".//s:path[@class='bp-front']", NS) is not None
    assert root.find(".//s:a", NS).get("href") == "/runs/1/"
    assert "1 without both values not drawn" in root.find("s:desc", NS).text
    assert "style=" not in svg and "<script" not in svg
    assert scatter_chart([XYPoint(None, None, "x")], title="t", x_label="x", y_label="y") == ""


def test_a_timeline_rings_flagged_points_and_orders_by_time():
    day = 86400
    points = [XYPoint(1_767_225_600 + i * day, v, f"#{i}", series="b1" if i < 6 else "b2",
                      flag="regression" if i == 6 else "") for i, v in enumerate([100, 101, 99, 100, 102, 98, 80])]
    root = ET.fromstring(timeline_chart(list(reversed(points)), title="decode", y_label="decode", y_unit="tok/s"))
    groups = root.findall(".//s:g", NS)
    assert [g.find("s:title", NS).text.split("\n")[0] for g in groups] == [f"#{i}" for i in range(7)]
    assert groups[-1].get("class") == "bp-point bp-flag-regression"
    assert "1 flagged change" in root.find("s:desc", NS).text


def _tick_labels(svg: str) -> list[tuple[str, str]]:
    """The x-axis tick labels and their anchors."""
    root = ET.fromstring(svg)
    return [(t.text, t.get("text-anchor")) for t in root.findall("s:text", NS) if t.get("class") == "bp-x-tick"]


def test_timeline_ticks_come_from_the_data_range_and_are_never_cut_off():
    start = 1764650000.0  # runs minutes apart: times, not five copies of one date
    minutes = [XYPoint(start + 60 * i, 100 + i, f"run {i}") for i in range(6)]
    labels = _tick_labels(timeline_chart(minutes, title="t", y_label="decode"))
    texts = [text for text, _ in labels]
    assert len(texts) >= 2 and len(set(texts)) == len(texts) and all(":" in t for t in texts), texts
    # a tick at the right edge is anchored at its end, so the label stays inside the frame
    assert labels[-1][1] in ("end", "middle") and labels[0][1] in ("start", "middle")
    months = [XYPoint(start + 86400 * 10 * i, 100, f"run {i}") for i in range(10)]
    texts = [text for text, _ in _tick_labels(timeline_chart(months, title="t", y_label="decode"))]
    assert len(set(texts)) == len(texts) and all(len(t) == 10 and t.count("-") == 2 for t in texts), texts
