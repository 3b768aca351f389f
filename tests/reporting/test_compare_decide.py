"""compare as people decide with it: cached prefill never shown as a rate,
output lengths and finish reasons beside the rates, noise bands, ratios with
a verdict, percentiles when n allows, warnings a reader needs, and tables
that fit a 100-column terminal."""

from __future__ import annotations

import json

import pytest

from benchpack import cli
from benchpack.reporting.compare import compare_runs
from benchpack.reporting.report import compare_blocks, render_compare
from benchpack.reporting.document import to_terminal_text
from benchpack.reporting.report import TERMINAL_COLUMNS
from benchpack.results.resultdir import load_result_dir
from tests.data_paths import REAL_RESULTS
from tests.reporting.test_compare import MISSING, make_row, table_cell, write_run


def row(case="a", *, ttft=0.2, tpot=0.01, output=128, finish="stop", prompt=94, cached=0, server=None,
        nonce=None, **extra):
    r = make_row(case, prompt=prompt, cached=cached, ttft=ttft, tpot=tpot, prefill=prompt / ttft, **extra)
    r["tokens"]["output"] = output
    r["finish_reason"] = finish
    if server is not None:
        r["backend"] = {"prompt_per_second": server}
    if nonce is not None:
        r["prompt_cache"] = {"policy": "cold", "cache_prompt_param": None, "nonce": nonce}
    return r


def compare(root, *runs):
    root.mkdir(parents=True, exist_ok=True)
    dirs = [write_run(root, f"run{i}", rows) for i, rows in enumerate(runs)]
    return compare_runs([load_result_dir(d) for d in dirs]), dirs


def test_a_prefill_served_from_the_prompt_cache_is_shown_as_cached_with_the_servers_rate(tmp_path):
    # What llama-server did to runtime-sweep: 93 of 94 prompt tokens from cache in both runs.
    cached = [row(cached=93, ttft=0.0126, server=85.0) for _ in range(3)]
    comparison, _ = compare(tmp_path, cached, cached)
    case = comparison.cases[0]
    assert case.parity == "cached"
    assert all(s.medians["prefill_tps"] is None and s.cache_state == "cached" for s in case.runs)
    markdown = render_compare(comparison)
    assert table_cell(markdown, "a", "run0") == "cached"
    assert table_cell(markdown, "a", "run1", "server prefill") == "85.0"
    [warning] = [w for w in comparison.warnings if w.code == "prefill-cached"]
    assert "93 of 94 prompt tokens" in warning.message and "--prompt-cache cold" in warning.message
    assert "7460" not in markdown  # 94 / 0.0126 s: the figure that used to be shown as a prefill rate


def test_cold_rows_show_the_client_and_server_prefill_side_by_side(tmp_path):
    cold = [row(ttft=0.2, server=500.0) for _ in range(3)]
    comparison, _ = compare(tmp_path, cold, cold)
    markdown = render_compare(comparison)
    assert comparison.cases[0].parity == "comparable"
    assert table_cell(markdown, "a", "run0") == "470.0"  # 94 / 0.2 s
    assert table_cell(markdown, "a", "run0", "server prefill") == "500.0"


def test_nonce_prompts_without_cache_counts_are_cold_and_comparable(tmp_path):
    # Ollama reports no cached-prompt count; the nonce line made every prompt cold.
    ollama = [row(cached=MISSING, nonce=f"{i:016x}") for i in range(3)]
    comparison, _ = compare(tmp_path, ollama, ollama)
    assert comparison.cases[0].parity == "comparable"
    assert comparison.cases[0].runs[0].medians["prefill_tps"] == 470.0


def test_it_shows_output_tokens_and_finish_reasons_and_warns_when_lengths_differ(tmp_path):
    full = [row(output=128, finish="length") for _ in range(3)]
    short = [row(output=74, finish="stop", tpot=0.005) for _ in range(3)]
    comparison, dirs = compare(tmp_path, full, short)
    markdown = render_compare(comparison)
    assert table_cell(markdown, "a", "run0", "output") == "128 length"
    assert table_cell(markdown, "a", "run1", "output") == "74 stop"
    data = comparison.to_dict()["cases"][0]["runs"]
    assert [r["output_tokens_med"] for r in data] == [128, 74]
    assert [r["finish_reasons"] for r in data] == [{"length": 3}, {"stop": 3}]
    [warning] = [w for w in comparison.warnings if w.code == "output-diff"]
    assert "run0: 128 (length)" in warning.message and "run1: 74 (stop)" in warning.message


def test_each_median_carries_a_noise_band_and_later_runs_a_ratio_with_a_verdict(tmp_path):
    base = [row(ttft=t, tpot=0.010) for t in (0.200, 0.202, 0.198, 0.201, 0.199)]
    same = [row(ttft=t, tpot=0.010) for t in (0.201, 0.199, 0.203, 0.197, 0.200)]
    slower = [row(ttft=t, tpot=0.012) for t in (0.300, 0.305, 0.295, 0.302, 0.298)]
    comparison, _ = compare(tmp_path, base, same, slower)
    runs = comparison.cases[0].runs
    low, high = runs[0].bands["ttft_s"]
    assert low <= 0.200 <= high and high - low < 0.01
    assert runs[1].vs_first["ttft_s"]["verdict"] == "within-noise"
    assert runs[2].vs_first["ttft_s"]["verdict"] == "outside-noise"
    assert runs[2].vs_first["ttft_s"]["ratio"] == pytest.approx(1.5)
    assert runs[2].vs_first["decode_rate"]["verdict"] == "outside-noise"
    assert runs[2].vs_first["decode_rate"]["ratio"] == pytest.approx(100 / 120)
    markdown = render_compare(comparison)
    assert "run2 vs run0: TTFT ×1.50 (outside the noise, 95 % interval" in markdown
    assert "run1 vs run0: TTFT ×1.00 (within the noise" in markdown
    assert table_cell(markdown, "a", "run0", "TTFT s").startswith("0.2000 ±")


def test_two_repetitions_are_too_few_for_a_verdict(tmp_path):
    comparison, _ = compare(tmp_path, [row(ttft=0.2), row(ttft=0.2)], [row(ttft=0.4), row(ttft=0.4)])
    assert comparison.cases[0].runs[1].vs_first["ttft_s"]["verdict"] == "too-few"
    assert "too few repetitions to tell" in render_compare(comparison)


def test_percentiles_show_only_when_there_are_enough_rows(tmp_path):
    few, _ = compare(tmp_path / "few",
                     [row(ttft=0.1 + i / 1000) for i in range(9)], [row()])
    assert "Percentiles" not in render_compare(few)
    many, _ = compare(tmp_path / "many",
                      [row(ttft=0.1 + i / 1000) for i in range(12)], [row()])
    stats = many.cases[0].runs[0]
    assert set(stats.percentiles["ttft_s"]) == {"p50", "p90"}  # p99 needs 100 rows
    markdown = render_compare(many)
    assert "Percentiles (cases with 10 or more ok rows)" in markdown and "| a | run0 | 12 |" in markdown


def test_it_warns_about_missing_and_differing_cached_prompt_counts(tmp_path):
    missing, _ = compare(tmp_path / "m",
                         [row(cached=0)], [row(cached=MISSING)])
    assert "cache-missing" in [w.code for w in missing.warnings]
    differ, _ = compare(tmp_path / "d",
                        [row(cached=0)], [row(cached=5)])
    [warning] = [w for w in differ.warnings if w.code == "cache-diff"]
    assert "run0: 0" in warning.message and "run1: 5" in warning.message


def test_it_warns_about_an_incomplete_run_and_a_model_the_server_swapped(tmp_path):
    mismatch = row()
    mismatch["warnings"] = [{"code": "model-mismatch", "message": "asked for model 'x', the server served 'y'"}]
    comparison_dirs = [write_run(tmp_path, "done", [row()]), write_run(tmp_path, "cut", [mismatch])]
    (comparison_dirs[1] / "run-metadata.json").write_text(json.dumps(
        {"complete": False, "incomplete_reason": "interrupted (Ctrl-C) after 4 of 12 executions"}))
    comparison = compare_runs([load_result_dir(d) for d in comparison_dirs])
    codes = {w.code: w.message for w in comparison.warnings}
    assert "interrupted (Ctrl-C) after 4 of 12" in codes["incomplete-run"]
    assert "the server served 'y'" in codes["model-mismatch"]
    assert comparison.runs[1].complete is False
    assert "| cut | pack-a 1.0.0 | m |" in render_compare(comparison)


def test_the_terminal_tables_fit_100_columns_with_real_results_and_long_labels(tmp_path):
    long_name = tmp_path / "2026-11-30-llama-server-qwen2.5-coder-32b-instruct-q4_k_m-ctx32k"
    long_name.mkdir()
    rows = [row(case, ttft=0.1234, server=512.3, output=128, finish="length")
            for case in ("short", "a-much-longer-case-identifier-for-wrapping") for _ in range(3)]
    dirs = [write_run(long_name, "run", rows)] + [REAL_RESULTS / "2026-04-29-llama-server-runtime",
                                                  REAL_RESULTS / "2026-04-28-mlx-lm-runtime"]
    results = [load_result_dir(d) for d in dirs]
    # The terminal's default columns (the command picks them when stdout is a terminal).
    text = to_terminal_text(compare_blocks(compare_runs(results), results, case_columns=TERMINAL_COLUMNS), width=100)
    assert max(len(line) for line in text.splitlines()) <= 100
    # Numbers are never wrapped: every figure is whole on its line.
    assert "0.1234 ±<1%" in text and "512.3" in text and "128 length" in text


def test_output_goes_to_a_markdown_file_and_json_has_the_new_fields(tmp_path, monkeypatch, capsys):
    one = write_run(tmp_path, "one", [row(output=100) for _ in range(3)])
    two = write_run(tmp_path, "two", [row(output=100) for _ in range(3)])
    monkeypatch.setattr(cli, "COMMAND_MODULES", ["benchpack.commands.compare"])
    target = tmp_path / "compare.md"
    assert cli.main(["compare", str(one), str(two), "--output", str(target)]) == 0
    assert target.read_text().startswith("# Compare\n") and f"wrote {target}" in capsys.readouterr().out
    assert cli.main(["compare", "--json", str(one), str(two)]) == 0
    data = json.loads(capsys.readouterr().out)
    stats = data["cases"][0]["runs"][1]
    assert stats["output_tokens_med"] == 100 and stats["cache_state"] == "cold"
    assert set(stats["bands"]) >= {"ttft_s", "decode_rate"} and stats["vs_first"]["ttft_s"]["verdict"]


def test_on_a_terminal_it_draws_tables_not_markdown(tmp_path):
    import argparse
    import io

    from benchpack.reporting.output import emit

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    comparison, dirs = compare(tmp_path, [row() for _ in range(3)], [row() for _ in range(3)])
    screen = Terminal()
    emit(argparse.Namespace(json=False, markdown=False, output=None), compare_blocks(comparison), {}, screen)
    text = screen.getvalue()
    assert "a · prefill parity: comparable" in text and "|---" not in text and "TTFT s" in text


def test_columns_chooses_the_case_tables_columns_and_refuses_unknown_ones(tmp_path, monkeypatch, capsys):
    from benchpack.commands import compare as command
    from benchpack.reporting import report

    assert command.COLUMN_NAMES == tuple(report.CASE_COLUMNS) and command.TERMINAL_DEFAULT == TERMINAL_COLUMNS
    one = write_run(tmp_path, "one", [row() for _ in range(3)])
    two = write_run(tmp_path, "two", [row() for _ in range(3)])
    monkeypatch.setattr(cli, "COMMAND_MODULES", ["benchpack.commands.compare"])
    assert cli.main(["compare", str(one), str(two), "--columns", "ttft,total"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    header = lines[next(i for i, line in enumerate(lines) if line.startswith("**a · prefill parity")) + 2]
    assert [h.strip() for h in header.strip("|").split("|")] == ["run", "TTFT s", "total tok/s"]
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["compare", str(one), str(two), "--columns", "ttft,speed"])
    assert exit_info.value.code == 2 and "unknown column speed" in capsys.readouterr().err
