"""What `benchpack run` prints when it ends: a per-case table, every failure, the counts.

The counts line says the two things a person scripting sweeps needs apart:
how many executions failed to run (the endpoint errored, the stream broke:
exit status 1) and how many answers failed their check (a result, not an
error: exit status 0 unless `--fail-on-check`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

# msgspec.Struct, not @dataclass: a dataclass compiles its generated methods from source text in every
# process (~0.4 ms a class); a Struct is built in C (docs/measurement.md, "Issue 34 item 2: stop 43").
import msgspec

# The table's modules (compare, report, plausibility, the document blocks) are imported by
# summary_blocks, after the last request: `benchpack run` imports this module before its first one.
if TYPE_CHECKING:
    from benchpack.reporting.document import Block
    from benchpack.results.resultdir import ResultDir


class Counts(msgspec.Struct, frozen=True):
    rows: int
    failed_to_run: int
    checked: int  # ok rows whose answer was checked
    failed_check: int
    suspicious: int = 0  # of failed_check: repo-task answers that introspect their caller (never passed)

    def line(self) -> str:
        checks = (f"{self.failed_check} answer{'s' if self.failed_check != 1 else ''} failed their check"
                  if self.checked else "no answers checked (the pack scores nothing)")
        if self.suspicious:
            checks += f" ({self.suspicious} of them suspicious: introspection of the caller or environment)"
        return f"{self.rows} row{'s' if self.rows != 1 else ''} ran, {self.failed_to_run} failed to run, {checks}"


def count_rows(rows: list[dict]) -> Counts:
    ok = [r for r in rows if r.get("ok") is True]
    verdicts = [(r.get("scoring") or {}).get("passed") for r in ok if isinstance(r.get("scoring"), dict)]
    verdicts = [v for v in verdicts if isinstance(v, bool)]
    suspicious = sum(1 for r in ok if isinstance(r.get("repo_task"), dict) and r["repo_task"].get("status") == "suspicious")
    return Counts(rows=len(rows), failed_to_run=len(rows) - len(ok), checked=len(verdicts),
                  failed_check=sum(1 for v in verdicts if not v), suspicious=suspicious)


def failure_lines(rows: list[dict]) -> list[str]:
    """Every row that failed to run, and every answer that failed its check, with the reason."""
    lines = []
    for row in rows:
        where = str(row.get("case"))
        if row.get("repetition") is not None:
            where += f" rep {row['repetition']}"
        scoring = row.get("scoring") if isinstance(row.get("scoring"), dict) else {}
        if row.get("ok") is not True:
            lines.append(f"{where}: failed to run: {_one_line(row.get('error') or 'no error recorded')}")
        elif scoring.get("passed") is False:
            repo = row.get("repo_task") if isinstance(row.get("repo_task"), dict) else {}
            if repo.get("status") == "suspicious":
                # Counted apart: not a wrong answer but one that inspects what runs it (docs/audits.md).
                first = (repo.get("suspicious") or ["(no lines recorded)"])[0]
                lines.append(f"{where}: suspicious, never passed: adds introspection of its caller or environment: {_one_line(first)}")
                continue
            if repo.get("status") == "error" and repo.get("failure_reason"):
                # The runner's own tooling failed (e.g. no git): say which, not "the answer failed".
                lines.append(f"{where}: could not be checked: {_one_line(repo['failure_reason'])}")
                continue
            reason = scoring.get("error") or f"the output did not pass its {scoring.get('mode', '')} check".replace("  ", " ")
            lines.append(f"{where}: answer failed its check: {_one_line(reason)}")
    return lines


def _one_line(text: str, limit: int = 200) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def summary_blocks(result: ResultDir, warnings: list[str], incomplete_reason: str | None) -> list[Block]:
    from benchpack.reporting.compare import compare_runs
    from benchpack.reporting.document import Bullets, Heading, Paragraph
    from benchpack.reporting.report import run_cases_table
    from benchpack.results.placement import placement_note

    blocks: list[Block] = []
    if result.rows:
        single = compare_runs([result], lanes=False)  # the table shows no lane figures
        blocks += [Heading("Results", 2), run_cases_table(single),
                   Paragraph("Medians over the rows that ran; ± is the 95 % interval of the median. decode is "
                             "1/tpot_s; `cached`: the server answered the prompt from its cache, so there is no "
                             "prefill rate (docs/measurement.md).", muted=True)]
        from benchpack.results.provenance import is_scripted

        if is_scripted(result.run_metadata):
            # a scripted endpoint is no model: nothing to judge, and the run is demo data (issue 32 item 8)
            blocks.append(Paragraph("Scripted endpoint — demo data: these figures are the script's, not a "
                                    "model's, so plausibility is not judged; the registry labels such runs "
                                    "demo data."))
        else:
            from benchpack.results import plausibility  # its chip table and patterns: not for a scripted run

            verdict = plausibility.run_verdict(
                plausibility.run_row_verdicts(result.rows, result.hardware, result.run_metadata))
            # shown whatever it is: an unchecked run says why, never nothing (docs/measurement.md, "Plausibility")
            blocks.append(Paragraph(f"Plausibility: {verdict.status}: {verdict.reason}"))
        unplaced = placement_note(result.rows)
        if unplaced:  # docs/measurement.md, "What the reads could not see"
            blocks.append(Paragraph(f"Timing: {unplaced}"))
    failures = failure_lines(result.rows)
    if failures:
        blocks += [Heading("Failures", 2), Bullets(failures)]
    if warnings:
        blocks += [Heading("Warnings", 2), Bullets(warnings)]
    if incomplete_reason:
        blocks.append(Paragraph(f"Incomplete run: {incomplete_reason}"))
    return blocks
