import json
import statistics
import sys
import types
from pathlib import Path

from benchpack import cli
from benchpack.reporting.report import redact_endpoint, render_report
from benchpack.results.resultdir import load_result_dir
from tests.data_paths import REAL_RESULTS
from tests.reporting.test_compare import table_cell

REAL_DIRS = sorted(p for p in REAL_RESULTS.iterdir() if p.is_dir())


def make_row(case, *, ok=True, rep=None, prompt=100, cached=0, wall=1.0, ttft=0.1, tpot=0.02, passed=None, error=None, **extra):
    row = {
        "pack": {"id": "pack-a", "version": "1.0.0"}, "case": case, "adapter": "openai-chat",
        "endpoint": "http://127.0.0.1:1/v1/chat/completions", "model": "m", "ok": ok,
        "timing": {"wall_s": wall, "ttft_s": ttft, "prefill_tps": 1000.0, "decode_tps": 50.0, "total_tps": 40.0, "tpot_s": tpot},
        "tokens": {"prompt": prompt, "output": 10, "cached_prompt": cached},
        "scoring": None if passed is None else {"mode": "verify-script", "passed": passed},
    }
    if rep is not None:
        row["repetition"] = rep
    if error:
        row["error"] = error
    row.update(extra)
    return row


def write_run(root: Path, name: str, rows: list[dict], metadata: dict | None = None) -> Path:
    path = root / name
    path.mkdir()
    (path / "run.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    if metadata is not None:
        (path / "run-metadata.json").write_text(json.dumps(metadata))
    return path


def report(*paths, **kwargs) -> str:
    return render_report([load_result_dir(p) for p in paths], **kwargs)


def section(markdown: str, heading: str) -> str:
    start = markdown.index(heading)
    rest = markdown[start + len(heading):]
    ends = [i for i in (rest.find("\n## "), rest.find("\n### ")) if i >= 0]
    return rest[: min(ends)] if ends else rest


def table_row(markdown: str, first_cell: str) -> list[str]:
    for line in markdown.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if line.startswith("|") and cells[0] == first_cell:
            return cells
    raise AssertionError(f"no row starting with {first_cell}")


def repo_row(case, rep, status, patch_path):
    return make_row(
        case, rep=rep, passed=status == "passed",
        workspace={"path": f"workspace/{case}/rep-{rep:03d}", "source_fixture_id": "repo", "source_path": "fixtures/repo"},
        patch={"path": patch_path},
        repo_task={"status": status, "verify_exit_code": 0 if status == "passed" else 1},
    )


# ---------------------------------------------------------------- real result directories


def test_it_reports_every_real_result_directory():
    markdown = report(*REAL_DIRS)
    for path in REAL_DIRS:
        assert f"## Run: {path.name}" in markdown
    assert "## Across runs" in markdown
    assert markdown.count("| `hostname` | atlas.local |") == 5


def test_it_shows_real_medians_and_spread_for_one_run():
    path = REAL_RESULTS / "2026-04-29-llama-server-runtime"
    rows = [json.loads(line) for line in (path / "run.jsonl").read_text().splitlines()]
    markdown = report(path)
    assert "## Across runs" not in markdown
    short_rows = [r for r in rows if r["case"] == "short"]
    decode = [r["timing"]["decode_tps"] for r in short_rows]
    walls = [r["timing"]["wall_s"] for r in short_rows]
    medians = table_row(section(markdown, "### Per-case medians"), "short")
    # Old rows have no tpot_s: decode falls back to decode_tps, marked.
    assert medians[5] == f"{statistics.median(decode):.1f}*" == "411.8*"
    assert medians[3] == "—"  # old rows have no cached_prompt, so prefill stays hidden
    spread = table_row(section(markdown, "### Repetition spread"), "short")
    assert spread[2] == f"{min(walls):.4f} / {statistics.median(walls):.4f} / {max(walls):.4f}"
    assert "No row reports `tokens.cached_prompt`" in markdown
    assert "_No run-metadata.json" in markdown


def test_it_shows_prefill_for_a_real_run_with_cache_counts():
    markdown = report(REAL_RESULTS / "2026-04-30-llama-server-desktop-django-wrap")
    medians = table_row(section(markdown, "### Per-case medians"), "wrap-plan-small")
    assert medians[3] == "2074.1"
    cache = table_row(section(markdown, "### Cache rows"), "wrap-plan-small")
    assert cache[1:] == ["1", "1", "569", "0", "cold"]
    assert table_row(markdown, "2026-04-30-llama-server-desktop-django-wrap")[-2] == "0/2"


# ---------------------------------------------------------------- run metadata (D-025)


def test_it_renders_run_metadata_sections_and_notes(tmp_path):
    metadata = {
        "runtime": {"name": "llama-server", "version": "b8960", "command": "llama-server --a | b"},
        "model": {"quantization": "Q4_K_M", "sha256": "6eb9"},
        "operating_conditions": {"power": "AC", "thermal": "nominal"},
        "notes": "first line\n# not a heading",
        "campaign": "april",
    }
    markdown = report(write_run(tmp_path, "one", [make_row("a")], metadata))
    meta = section(markdown, "### Run metadata")
    for key in ("`name`", "`version`", "`quantization`", "`sha256`", "`power`", "`thermal`", "`campaign`"):
        assert key in meta
    assert "**operating_conditions**" in meta
    assert "| `command` | llama-server --a \\| b |" in meta
    assert "> first line\n> # not a heading" in meta
    assert table_row(markdown, "one")[3] == "llama-server b8960"


# ---------------------------------------------------------------- across runs


def test_it_includes_prefill_parity_across_runs(tmp_path):
    one = write_run(tmp_path, "one", [make_row("a", cached=0), make_row("b", prompt=100)])
    two = write_run(tmp_path, "two", [make_row("a", cached=0), make_row("b", prompt=200)])
    across = section(report(one, two), "## Across runs")
    assert "**a · prefill parity: comparable**" in across and "**b · prefill parity: prompt-diff**" in across
    assert table_cell(across, "a", "two") == "1000.0"
    assert table_cell(across, "b", "one") == table_cell(across, "b", "two") == "—"
    warnings = section(report(one, two), "## Warnings")
    assert "case b: prompt-token medians differ (one: 100, two: 200)" in warnings


def test_it_lists_failed_rows_with_their_errors(tmp_path):
    rows = [make_row("a", rep=1), make_row("a", rep=2, ok=False, prompt=None, error="connection refused | reset")]
    markdown = report(write_run(tmp_path, "one", rows))
    assert "one: 1 failed row excluded from medians (a: 1)" in section(markdown, "## Warnings")
    assert "- `a rep 2`: connection refused | reset" in section(markdown, "### Failed rows")


# ---------------------------------------------------------------- repo tasks


def test_it_counts_repo_task_statuses_and_patch_bytes(tmp_path):
    rows = [
        repo_row("fix", 1, "passed", "patch/fix/rep-001.diff"),
        repo_row("fix", 2, "failed", "patch/fix/rep-002.diff"),
        repo_row("fix", 3, "failed", "patch/fix/rep-003.diff"),  # file never written
        repo_row("fix", 4, "passed", "../outside.diff"),
        make_row("fix", rep=5, ok=False, error="endpoint down"),  # failed before the task phase
        make_row("other-chat-case"),
    ]
    path = write_run(tmp_path, "run", rows)
    (tmp_path / "outside.diff").write_text("x" * 50)
    (path / "patch" / "fix").mkdir(parents=True)
    (path / "patch" / "fix" / "rep-001.diff").write_text("+" * 120)
    (path / "patch" / "fix" / "rep-002.diff").write_text("")
    cells = table_row(section(report(path), "### Repo tasks"), "fix")
    assert cells[1:5] == ["5", "2", "2", "unknown 1"]
    assert "| other-chat-case |" not in section(report(path), "### Repo tasks")
    assert cells[5] == "120, 0, unknown, unknown, unknown"
    assert cells[6:] == ["60", "1"]


def test_it_leaves_out_the_repo_task_section_for_chat_runs(tmp_path):
    assert "### Repo tasks" not in report(write_run(tmp_path, "run", [make_row("a")]))


# ---------------------------------------------------------------- model calls


def model_call_run(tmp_path):
    path = write_run(tmp_path, "run", [repo_row("fix", 1, "passed", "patch/fix/rep-001.diff")])
    logs = path / "task" / "fix"
    logs.mkdir(parents=True)
    (logs / "rep-001.model-calls.jsonl").write_text('{"schema_version":1,"sequence":1,"model":"m","ok":true}\n')
    (logs / "rep-001.stdout.log").write_text("")
    return path


def test_it_summarizes_model_call_logs_with_the_allowlist_summarizer(tmp_path, monkeypatch):
    seen = []

    def summarize_model_calls(paths):
        seen.append([p.name for p in paths])
        return {"calls": 1, "ok": 1, "models": ["m"], "tokens": {"prompt": 12}}

    fake = types.ModuleType("benchpack.repo_task.model_calls")
    fake.summarize_model_calls = summarize_model_calls
    monkeypatch.setitem(sys.modules, "benchpack.repo_task.model_calls", fake)
    markdown = report(model_call_run(tmp_path))
    calls = section(markdown, "### Model calls")
    assert seen == [["rep-001.model-calls.jsonl"]]
    assert table_row(calls, "`calls`") == ["`calls`", "1"]
    assert table_row(calls, "`models`") == ["`models`", "m"]
    assert table_row(calls, "`tokens.prompt`") == ["`tokens.prompt`", "12"]


def test_it_says_so_when_no_summarizer_is_available(tmp_path):
    markdown = report(model_call_run(tmp_path), model_call_summarizer=None)
    assert "1 model-call log file(s) present; the summarizer is not available" in section(markdown, "### Model calls")


def test_it_leaves_out_model_calls_without_logs(tmp_path):
    markdown = report(write_run(tmp_path, "run", [make_row("a")]), model_call_summarizer=lambda paths: {"calls": 0})
    assert "### Model calls" not in markdown


# ---------------------------------------------------------------- CLI and small helpers


def test_it_prints_the_report_and_exits_zero(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(cli, "COMMAND_MODULES", ["benchpack.commands.report"])
    assert cli.main(["report", str(write_run(tmp_path, "one", [make_row("a")]))]) == 0
    assert capsys.readouterr().out.startswith("# Benchpack report")


def test_it_exits_2_for_a_bad_result_directory(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(cli, "COMMAND_MODULES", ["benchpack.commands.report"])
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "run.jsonl").write_text('{"case": "a", "ok": true}\n')
    (bad / "hardware.json").write_text("[1]")
    assert cli.main(["report", str(bad), str(tmp_path / "absent")]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2 and "hardware.json" in err[0] and "absent" in err[1]


def test_it_strips_credentials_and_queries_from_endpoints():
    assert redact_endpoint("http://user:pw@host:8080/v1/chat?key=abc") == "http://***@host:8080/v1/chat"
    assert redact_endpoint("http://127.0.0.1:8081/v1") == "http://127.0.0.1:8081/v1"


def test_it_keeps_the_report_when_a_model_call_log_cannot_be_summarized(tmp_path):
    def broken(paths):
        raise ValueError("line 1: secret-looking text that must not be echoed")

    calls = section(report(model_call_run(tmp_path), model_call_summarizer=broken), "### Model calls")
    assert "could not be summarized (ValueError)" in calls
    assert "secret-looking" not in calls


def test_it_says_a_run_did_not_finish_and_fits_a_100_column_terminal(tmp_path):
    from benchpack.reporting.report import report_blocks
    from benchpack.reporting.document import to_terminal_text

    cut = write_run(tmp_path, "a-rather-long-result-directory-name-for-a-cut-run",
                    [make_row("a-long-case-identifier", rep=i, finish_reason="length") for i in (1, 2)],
                    {"complete": False, "incomplete_reason": "interrupted (Ctrl-C) after 2 of 6 executions",
                     "runtime": {"name": "llama-server", "version": "b6100",
                                 "config": {"context_size": 4096, "parallel_slots": 4, "threads": 8}}})
    other = write_run(tmp_path, "other", [make_row("a-long-case-identifier")])
    markdown = report(cut, other)
    assert "**Incomplete**: interrupted (Ctrl-C) after 2 of 6 executions" in markdown
    assert "the run did not finish (interrupted (Ctrl-C) after 2 of 6 executions)" in markdown
    assert "llama-server b6100 (context_size=4096, parallel_slots=4, threads=8)" in markdown
    text = to_terminal_text(report_blocks([load_result_dir(cut), load_result_dir(other)]), width=100)
    assert max(len(line) for line in text.splitlines()) <= 100


def test_it_writes_markdown_to_a_file_and_json_for_scripts(tmp_path, monkeypatch, capsys):
    one = write_run(tmp_path, "one", [make_row("a")])
    monkeypatch.setattr(cli, "COMMAND_MODULES", ["benchpack.commands.report"])
    assert cli.main(["report", str(one), "-o", str(tmp_path / "r.md")]) == 0
    assert (tmp_path / "r.md").read_text().startswith("# Benchpack report\n")
    capsys.readouterr()
    assert cli.main(["report", "--json", str(one)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["comparison"]["cases"][0]["case"] == "a" and data["runs"][0]["path"] == str(one)


def test_a_single_run_with_enough_repetitions_shows_percentiles(tmp_path):
    run = write_run(tmp_path, "many", [make_row("a", rep=i, ttft=0.1 + i / 1000) for i in range(1, 13)])
    section_text = section(report(run), "### Percentiles (cases with 10 or more ok rows)")
    assert "| a | many | 12 |" in section_text
    few = write_run(tmp_path, "few", [make_row("a", rep=i) for i in range(1, 4)])
    assert "Percentiles" not in report(few)


def test_each_run_has_the_seeds_counts_line(tmp_path):
    run = write_run(tmp_path, "one", [make_row("a", passed=True), make_row("a", passed=True),
                                      make_row("a", passed=False), make_row("b"),
                                      make_row("b", ok=False, error={"kind": "http", "message": "500"})])
    text = report(run)
    assert "- Counts: 5 rows, 4 ok, 2 passed, 1 failed, 2 unscored" in text


def test_the_runs_own_warnings_are_in_the_warnings_section_not_none(tmp_path):
    warnings = [f"depth lane: depth {d} skipped: above the server's context (4096 tokens)" for d in (8192, 16384)]
    run = write_run(tmp_path, "one", [make_row("a")], metadata={"complete": True, "warnings": warnings})
    part = section(report(run), "## Warnings")
    assert "None" not in part
    for warning in warnings:
        assert f"- one: {warning} [run]" in part
