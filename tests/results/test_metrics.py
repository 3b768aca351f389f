"""The metric registry: one definition of each figure, and docs/measurement.md's table generated from it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from benchpack.results import metrics

DOC = Path(__file__).resolve().parents[2] / "docs" / "measurement.md"


def test_the_docs_table_is_the_registry():
    text = DOC.read_text(encoding="utf-8")
    found = re.search(r"<!-- metrics-table:start -->\n(.*?)\n<!-- metrics-table:end -->", text, re.S)
    assert found, "docs/measurement.md lost its metrics-table markers"
    assert found.group(1) == metrics.formula_table(), \
        "regenerate the table: uv run python -m benchpack.results.metrics"


def test_decode_is_one_over_tpot_and_the_legacy_figure_is_never_ranked():
    row = {"timing": {"tpot_s": 0.002, "decode_tps": 532.0}}
    assert metrics.metric("decode_rate").value(row) == pytest.approx(500.0)
    assert metrics.metric("decode_rate").display(500.04) == "500.0"
    legacy = metrics.metric("decode_tps")
    assert legacy.label == "output ÷ (wall − TTFT)" and not legacy.rankable
    assert "decode_tps" not in metrics.RANKABLE and "decode_rate" in metrics.RANKABLE


@pytest.mark.parametrize("row", [{"timing": {"tpot_s": 0}}, {"timing": {"tpot_s": None}}, {"timing": "x"}, {},
                                 {"timing": {"tpot_s": True}}, {"timing": {"tpot_s": float("nan")}}])
def test_a_row_without_a_positive_tpot_has_no_decode(row):
    assert metrics.decode_rate_of(row) is None


def test_a_board_ranks_by_the_first_figure_every_row_has():
    assert metrics.board_default(lambda name: True) == "decode_rate"
    assert metrics.board_default(lambda name: name != "decode_rate") == "ttft_s"
    assert metrics.board_default(lambda name: name == "pass_rate") == "pass_rate"


def test_the_core_compare_reads_its_figures_from_the_registry():
    from benchpack.reporting import compare

    row = {"timing": {"tpot_s": 0.004, "decode_tps": 300.0, "ttft_s": 0.1}}
    for name in ("decode_rate", "decode_tps", "ttft_s", "tpot_s", "wall_s", "prefill_tps", "total_tps"):
        assert compare.METRICS[name](row) == metrics.metric(name).read(row), name
