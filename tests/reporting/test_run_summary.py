"""The end-of-run summary names rows whose reads could not place their tokens (issue 34 item 1)."""

import json

from benchpack.reporting.document import to_markdown
from benchpack.reporting.run_summary import summary_blocks
from benchpack.results.resultdir import load_result_dir


def _row(timing):
    return {"ok": True, "case": "c", "pack": {"id": "p", "version": "1"}, "adapter": "a", "model": "m",
            "timing": timing, "tokens": {"output": 6}}


def test_the_summary_counts_one_read_rows_and_says_how_late_the_reader_was(tmp_path):
    placed = _row({"wall_s": 0.1, "ttft_s": 0.02, "tpot_s": 0.002, "placement": None})
    burst = _row({"wall_s": 0.1, "ttft_s": 0.09, "tpot_s": None,
                  "placement": {"ttft": "upper", "tpot": "one_read", "reader_late_s": 0.0007}})
    (tmp_path / "run.jsonl").write_text("".join(json.dumps(r) + "\n" for r in (placed, burst, burst)))
    text = to_markdown(summary_blocks(load_result_dir(tmp_path), [], None))
    assert "Timing: 2 of 3 ok rows have no TPOT" in text
    assert "the reader was 0.7 ms late: the server sent the tokens together" in text
    (tmp_path / "run.jsonl").write_text(json.dumps(placed) + "\n")
    assert "Timing:" not in to_markdown(summary_blocks(load_result_dir(tmp_path), [], None))
