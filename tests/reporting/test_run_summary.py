"""The end-of-run counts: a suspicious repo-task answer is counted apart from wrong answers (issue 31)."""

from __future__ import annotations

from benchpack.reporting.run_summary import count_rows, failure_lines


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
