"""The end-of-run counts and summary: a suspicious repo-task answer is counted apart from wrong answers
(issue 31); rows whose reads could not place their tokens are named (issue 34 item 1)."""

from __future__ import annotations

import json

from benchpack.reporting.document import to_markdown
from benchpack.reporting.run_summary import count_rows, failure_lines, summary_blocks
from benchpack.results.resultdir import load_result_dir


def row(status: str | None, passed: bool, **repo) -> dict:
    out = {"case": "c", "ok": True, "scoring": {"mode": "verify-script", "passed": passed}}
    if status is not None:
        out["repo_task"] = {"status": status, **repo}
    return out


def test_suspicious_answers_are_counted_apart_and_named_with_their_first_line():
    rows = [row("passed", True), row("failed", False, failure_reason="verifier checks failed: hidden-tests"),
            row("suspicious", False, suspicious=["pricing/bill.py:14: call-stack frames: caller = sys._getframe(1)"])]  # fmt: skip
    counts = count_rows(rows)
    assert (counts.checked, counts.failed_check, counts.suspicious) == (3, 2, 1)
    assert counts.line() == ("3 rows ran, 0 failed to run, 2 answers failed their check "
                             "(1 of them suspicious: introspection of the caller or environment)")  # fmt: skip
    lines = failure_lines(rows)
    assert lines[1].startswith("c: suspicious, never passed:") and "sys._getframe(1)" in lines[1]
    assert count_rows(rows[:2]).line() == "3 rows ran, 0 failed to run, 1 answer failed their check".replace("3 rows", "2 rows")


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
