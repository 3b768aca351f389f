"""Lanes in compare, report and their charts: a lane's rows never share a median with the base rows,
depth curves and per-level tables are shown, and `--charts` writes the rate-vs-depth SVGs."""

from __future__ import annotations

import json
import xml.dom.minidom

import pytest

from benchpack import cli
from benchpack.reporting.charts import Series, line_chart
from benchpack.reporting.compare import compare_runs
from benchpack.lanes import aggregate
from benchpack.packs.lane_spec import Slo
from benchpack.results.resultdir import ResultDir


def row(case="short", *, ok=True, ttft=0.5, tpot=0.05, prompt=100, cached=0, output=10, **lane):
    return {"pack": {"id": "p", "version": "1"}, "case": case, "adapter": "openai-chat", "model": "m", "ok": ok,
            "timing": {"ttft_s": ttft, "tpot_s": tpot, "prefill_tps": prompt / ttft, "wall_s": ttft + (tpot or 0) * 9},
            "tokens": {"prompt": prompt, "output": output, "cached_prompt": cached, "source": "usage"},
            "backend": {"prompt_per_second": prompt / ttft * 1.01}, **lane}


def depth_rows(scale=1.0):
    rows = [row()]
    for depth, ttft, tpot in ((0, 0.2, 0.02), (4096, 8.0, 0.03), (16384, 40.0, 0.05)):
        for _ in range(2):
            rows.append(row(ttft=ttft * scale, tpot=tpot, prompt=depth + 100, depth_tokens=depth))
    return rows


def level_rows():
    rows = []
    for level, ttfts in ((1, [0.1] * 4), (4, [0.1, 0.2, 3.0, 0.1])):
        for i, ttft in enumerate(ttfts):
            rows.append(row(ttft=ttft, tpot=0.2 if (level, i) == (4, 3) else 0.05, concurrency=level,
                            load={"sent_offset_s": i * (1.0 if level == 1 else 0.1),
                                  "done_offset_s": i * (1.0 if level == 1 else 0.1) + 1.0}))
    return rows


def test_group_label_and_lane():
    assert aggregate.group_label(row()) == "short"
    assert aggregate.group_label(row(depth_tokens=4096)) == "short @depth=4096"
    assert aggregate.group_label(row(concurrency=4)) == "short @concurrency=4"
    assert aggregate.group_label(row(arrival_rate=2.5)) == "short @rate=2.5/s"
    assert aggregate.group_label(row(depth_tokens=None)) == "short"  # null: the lane is off


def test_level_aggregate_and_goodput():
    one, four = aggregate.level_aggregates(level_rows(), Slo(ttft_s=2.0, tpot_s=0.1))
    assert one["duration_s"] == 4.0 and one["requests_per_s"] == 1.0 and one["output_tps"] == 10.0
    assert four["duration_s"] == pytest.approx(1.3) and four["output_tokens"] == 40
    # One request missed TTFT (3 s), one missed TPOT (0.2 s): 2 of 4 met the SLO.
    assert four["goodput"] == 0.5 and four["goodput_rps"] == pytest.approx(2 / 1.3, rel=1e-3)
    assert one["goodput"] == 1.0
    assert four["ttft_s"] == {"p50": pytest.approx(0.15)}  # p90 needs 10 requests, p99 100


def test_a_failed_request_counts_against_goodput_and_one_token_has_no_tpot_to_miss():
    rows = [row(concurrency=2, load={"sent_offset_s": 0, "done_offset_s": 1}),
            row(concurrency=2, ok=False, load={"sent_offset_s": 0, "done_offset_s": 1}),
            row(concurrency=2, tpot=None, output=1, load={"sent_offset_s": 0, "done_offset_s": 1})]
    (agg,) = aggregate.level_aggregates(rows, Slo(ttft_s=1.0, tpot_s=0.1))
    assert agg["goodput"] == pytest.approx(2 / 3, abs=1e-4) and agg["failed"] == 1


def test_compare_keeps_lanes_apart_and_reports_curves_and_levels(tmp_path):
    rows = depth_rows() + level_rows()
    result = ResultDir(path=tmp_path / "a", rows=rows, run_metadata={"lanes": {"slo": {"ttft_s": 2.0, "tpot_s": 0.1}}})
    comparison = compare_runs([result])
    labels = [case.case for case in comparison.cases]
    assert labels == ["short", "short @depth=0", "short @depth=4096", "short @depth=16384",
                      "short @concurrency=1", "short @concurrency=4"]
    base = comparison.cases[0].runs[0]
    assert base.n == 1  # the lanes' 14 other rows of the same case are not in the base median
    lanes = comparison.to_dict()["lanes"]["a"]
    assert [p["depth_tokens"] for p in lanes["depth"]["short"]] == [0, 4096, 16384]
    assert lanes["depth"]["short"][1]["prefill_tps"] == pytest.approx(4196 / 8.0)
    assert [a["goodput"] for a in lanes["levels"]] == [1.0, 0.5]


def test_a_cached_depth_has_no_rate_in_the_curve():
    rows = [row(prompt=4196, cached=4000, depth_tokens=4096), row(prompt=4196, cached=0, depth_tokens=4096)]
    (point,) = aggregate.depth_curves(rows)["short"]
    assert point["cache_state"] == "cached" and point["prefill_tps"] is None


def test_line_chart_is_valid_svg_with_escaped_labels_and_gaps():
    svg = line_chart([Series("run <a>", [(0, 100.0), (4096, None), (16384, 20.0)])], title="t & u",
                     x_label="depth", unit="tok/s")
    xml.dom.minidom.parseString(svg)
    assert "run &lt;a&gt;" in svg and "<polyline" not in svg  # a gap at 4096: two single points, no line
    assert svg.count("<circle") == 2


def write_run(path, rows, metadata=None):
    path.mkdir(parents=True)
    (path / "run.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (path / "run-metadata.json").write_text(json.dumps(metadata or {"complete": True}))
    (path / "hardware.json").write_text("{}")


def test_compare_and_report_write_depth_charts(tmp_path, capsys):
    write_run(tmp_path / "a", depth_rows() + level_rows())
    write_run(tmp_path / "b", depth_rows(scale=2.0))
    assert cli.main(["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--markdown",
                     "--charts", str(tmp_path / "charts")]) == 0
    out = capsys.readouterr().out
    assert "## Depth lane" in out and "## Concurrency and rate lanes" in out
    assert "| a | short | 4096 |" in out and "| b | short | 4096 |" in out
    assert "| a | 4 streams | 4/4 |" in out
    svg = (tmp_path / "charts" / "depth-short-prefill_tps.svg").read_text()
    xml.dom.minidom.parseString(svg)
    assert svg.count("<polyline") == 2  # one line per run
    assert f"]({tmp_path / 'charts' / 'depth-short-prefill_tps.svg'})" in out
    assert cli.main(["report", str(tmp_path / "a"), "--markdown"]) == 0
    report = capsys.readouterr().out
    assert "## Depth lane" in report and "short @depth=16384" in report


def test_bundle_row_schema_takes_the_lane_fields_and_refuses_bad_ones():
    from benchpack.bundles.checks import _ROW_CHECKER, _VALID_ROW

    good = row(depth_tokens=4096, energy={"joules": 1.5}, load={"sent_offset_s": 0.1})
    assert _ROW_CHECKER.problems(good) == [] and _VALID_ROW.decode(json.dumps(good))
    for lane in ({"concurrency": 4}, {"arrival_rate": 0.5}, {"depth_tokens": None}):
        assert _ROW_CHECKER.problems(row(**lane)) == []
    for bad in ({"depth_tokens": -1}, {"concurrency": 0}, {"arrival_rate": 0}, {"concurrency": 2.5},
                {"depth_tokens": "4k"}, {"energy": 3}):
        assert _ROW_CHECKER.problems(row(**bad)), bad
        with pytest.raises(Exception):
            _VALID_ROW.decode(json.dumps(row(**bad)))
