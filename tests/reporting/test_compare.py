import json
import statistics
from pathlib import Path

import pytest

from benchpack import cli
from benchpack.reporting.compare import PARITY_STATUSES, compare_runs
from benchpack.errors import BenchpackError
from benchpack.reporting.report import render_compare
from benchpack.results.resultdir import field, load_result_dir
from tests.data_paths import REAL_RESULTS

REAL_DIRS = sorted(p for p in REAL_RESULTS.iterdir() if p.is_dir())
MISSING = object()


def make_row(case, *, ok=True, prompt=100, cached=0, prefill=1000.0, wall=1.0, ttft=0.1, decode=50.0,
             total=40.0, tpot=0.02, pack=("pack-a", "1.0.0"), passed=None, error=None):
    tokens = {"output": 10}
    for name, value in (("prompt", prompt), ("cached_prompt", cached)):
        if value is not MISSING:
            tokens[name] = value
    row = {
        "pack": {"id": pack[0], "version": pack[1]}, "case": case, "adapter": "openai-chat",
        "endpoint": "http://127.0.0.1:1/v1/chat/completions", "model": "m", "ok": ok,
        "timing": {"wall_s": wall, "ttft_s": ttft, "prefill_tps": prefill, "decode_tps": decode,
                   "total_tps": total, "tpot_s": tpot},
        "tokens": tokens,
        "scoring": None if passed is None else {"mode": "contains", "passed": passed},
    }
    if error:
        row["error"] = error
    return row


def write_run(root: Path, name: str, rows: list[dict]) -> Path:
    path = root / name
    path.mkdir()
    (path / "run.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def compare_dirs(*paths):
    return compare_runs([load_result_dir(p) for p in paths])


def run_cli(argv, monkeypatch):
    # Only this command's module: the test must not depend on other commands existing yet.
    monkeypatch.setattr(cli, "COMMAND_MODULES", ["benchpack.commands.compare"])
    return cli.main(argv)


def table_cell(markdown: str, case: str, run: str, column: str = "prefill tok/s") -> str:
    """A cell of the per-case table titled `**<case> · prefill parity: …**`."""
    lines = markdown.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"**{case} · prefill parity:"))
    headers = [h.strip() for h in lines[start + 2].strip("|").split("|")]
    for line in lines[start + 4:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        if cells[0] == run:
            return cells[headers.index(column)]
    raise AssertionError(f"no row for {case}/{run}")


prefill_cell = table_cell


# ---------------------------------------------------------------- real result directories


def test_it_reports_the_llama_server_short_case_median_decode_rate():
    llama = REAL_RESULTS / "2026-04-29-llama-server-runtime"
    mlx = REAL_RESULTS / "2026-04-28-mlx-lm-runtime"
    comparison = compare_dirs(mlx, llama)
    short = next(c for c in comparison.cases if c.case == "short")
    by_run = {s.run: s for s in short.runs}
    # rows: 402.6665, 411.8203, 414.2094
    assert by_run[llama.name].medians["decode_tps"] == 411.8203
    assert by_run[mlx.name].medians["decode_tps"] == 436.6727
    assert by_run[llama.name].prompt_tokens_med == 104


def test_it_computes_medians_from_every_real_result_directory():
    results = [load_result_dir(p) for p in REAL_DIRS]
    comparison = compare_runs(results)
    for result, run in zip(results, comparison.runs):
        for case in comparison.cases:
            stats = next(s for s in case.runs if s.run == run.label)
            rows = [r for r in result.rows if r["case"] == case.case]
            assert stats.n == len(rows)
            if not rows:
                assert not stats.present
                continue
            for name in ("wall_s", "ttft_s", "decode_tps", "total_tps"):
                values = [field(r, f"timing.{name}") for r in rows if field(r, f"timing.{name}") is not None]
                assert stats.medians[name] == (statistics.median(values) if values else None)
            assert stats.prompt_tokens_med == statistics.median(field(r, "tokens.prompt") for r in rows)
            assert stats.medians["tpot_s"] is None  # older rows never had tpot_s


def test_it_finds_old_runtime_rows_cache_missing_and_hides_their_prefill():
    comparison = compare_dirs(REAL_RESULTS / "2026-04-28-mlx-lm-runtime", REAL_RESULTS / "2026-04-29-llama-server-runtime")
    assert [c.case for c in comparison.cases] == ["short", "medium", "long"]
    assert {c.parity for c in comparison.cases} == {"cache-missing"}
    assert all(s.medians["prefill_tps"] is None for c in comparison.cases for s in c.runs)
    markdown = render_compare(comparison)
    assert prefill_cell(markdown, "short", "2026-04-29-llama-server-runtime") == "—"


def test_it_counts_real_scoring_passes():
    comparison = compare_dirs(REAL_RESULTS / "2026-04-28-mlx-lm-smoke", REAL_RESULTS / "2026-04-30-llama-server-desktop-django-wrap")
    capital = next(c for c in comparison.cases if c.case == "capital")
    assert (capital.runs[0].scored, capital.runs[0].passed) == (1, 1)
    wrap = next(c for c in comparison.cases if c.case == "wrap-plan-small")
    assert (wrap.runs[1].scored, wrap.runs[1].passed) == (1, 0)
    assert wrap.runs[1].cached_prompt_tokens_med == 0


# ---------------------------------------------------------------- prefill parity


PARITY_CASES = {
    "missing-case": ([make_row("a"), make_row("b")], [make_row("b", prompt=MISSING)]),
    "prompt-missing": ([make_row("a"), make_row("a", prompt=None)], [make_row("a", cached=MISSING)]),
    "prompt-diff": ([make_row("a", prompt=100)], [make_row("a", prompt=120, cached=MISSING)]),
    "cache-missing": ([make_row("a", cached=5)], [make_row("a", cached=MISSING)]),
    # The seed's order: runs that differ in what came from cache are `cache-diff`, even when one was cached;
    # `cached` only when every compared run was served from cache.
    "cache-diff": ([make_row("a", cached=0)], [make_row("a", cached=64)]),
    "cached": ([make_row("a", cached=64)], [make_row("a", cached=64)]),
    "comparable": ([make_row("a", cached=0, prefill=900.0)], [make_row("a", cached=0, prefill=1100.0)]),
}


def test_differing_cached_medians_are_cache_diff_even_when_both_runs_were_cached(tmp_path):
    comparison = compare_dirs(write_run(tmp_path, "one", [make_row("a", cached=64)]),
                              write_run(tmp_path, "two", [make_row("a", cached=80)]))
    assert comparison.cases[0].parity == "cache-diff"


def test_the_parity_order_is_the_seeds_with_cached_after_cache_diff():
    assert PARITY_STATUSES.index("cache-diff") < PARITY_STATUSES.index("cached") < PARITY_STATUSES.index("comparable")


@pytest.mark.parametrize("status", PARITY_STATUSES)
def test_it_assigns_each_parity_status_by_priority(tmp_path, status):
    first, second = PARITY_CASES[status]
    comparison = compare_dirs(write_run(tmp_path, "one", first), write_run(tmp_path, "two", second))
    assert comparison.cases[0].case == "a"
    assert comparison.cases[0].parity == status


@pytest.mark.parametrize("status", [s for s in PARITY_STATUSES if s != "comparable"])
def test_it_renders_a_dash_for_prefill_unless_comparable(tmp_path, status):
    first, second = PARITY_CASES[status]
    comparison = compare_dirs(write_run(tmp_path, "one", first), write_run(tmp_path, "two", second))
    markdown = render_compare(comparison)
    # both runs carry prefill_tps timings; none may be shown (a run served from cache reads "cached")
    assert prefill_cell(markdown, "a", "one") == ("cached" if status == "cached" else "—")
    assert all(s.medians["prefill_tps"] is None for s in comparison.cases[0].runs)
    assert comparison.to_dict()["cases"][0]["runs"][0]["medians"]["prefill_tps"] is None


def test_it_shows_prefill_median_for_comparable_cases(tmp_path):
    first = [make_row("a", prefill=p) for p in (900.0, 1000.0, 5000.0)]
    second = [make_row("a", prefill=1100.0)]
    markdown = render_compare(compare_dirs(write_run(tmp_path, "one", first), write_run(tmp_path, "two", second)))
    assert prefill_cell(markdown, "a", "one") == "1000.0"
    assert prefill_cell(markdown, "a", "two") == "1100.0"


def test_it_uses_medians_not_single_rows_for_prompt_parity(tmp_path):
    first = [make_row("a", prompt=p) for p in (100, 100, 130)]
    second = [make_row("a", prompt=100)]
    comparison = compare_dirs(write_run(tmp_path, "one", first), write_run(tmp_path, "two", second))
    assert comparison.cases[0].parity == "comparable"


def test_it_ignores_failed_rows_for_parity_and_medians(tmp_path):
    first = [make_row("a", wall=1.0), make_row("a", wall=3.0), make_row("a", ok=False, prompt=None, wall=99.0, error="boom")]
    second = [make_row("a", wall=2.0)]
    comparison = compare_dirs(write_run(tmp_path, "one", first), write_run(tmp_path, "two", second))
    stats = comparison.cases[0].runs[0]
    assert (stats.n, stats.ok, stats.failed) == (3, 2, 1)
    assert stats.medians["wall_s"] == 2.0
    assert comparison.cases[0].parity == "comparable"


def test_it_treats_a_case_with_only_failed_rows_as_prompt_missing(tmp_path):
    first = [make_row("a", ok=False)]
    second = [make_row("a")]
    comparison = compare_dirs(write_run(tmp_path, "one", first), write_run(tmp_path, "two", second))
    assert comparison.cases[0].parity == "prompt-missing"
    assert comparison.cases[0].runs[0].medians["wall_s"] is None


def test_it_lists_cases_in_first_appearance_order_across_runs(tmp_path):
    first = [make_row("b"), make_row("a")]
    second = [make_row("c"), make_row("a")]
    comparison = compare_dirs(write_run(tmp_path, "one", first), write_run(tmp_path, "two", second))
    assert [c.case for c in comparison.cases] == ["b", "a", "c"]


# ---------------------------------------------------------------- warnings


def warning_codes(comparison):
    return [w.code for w in comparison.warnings]


def test_it_warns_when_pack_versions_differ(tmp_path):
    comparison = compare_dirs(
        write_run(tmp_path, "one", [make_row("a", pack=("pack-a", "1.0.0"))]),
        write_run(tmp_path, "two", [make_row("a", pack=("pack-a", "1.1.0"))]),
    )
    assert warning_codes(comparison) == ["pack-version-diff"]
    assert "1.0.0 in one" in comparison.warnings[0].message and "1.1.0 in two" in comparison.warnings[0].message


def test_it_warns_when_pack_ids_differ(tmp_path):
    comparison = compare_dirs(
        write_run(tmp_path, "one", [make_row("a", pack=("pack-a", "1.0.0"))]),
        write_run(tmp_path, "two", [make_row("a", pack=("pack-b", "1.0.0"))]),
    )
    assert warning_codes(comparison) == ["pack-id-diff"]


def test_it_warns_about_prompt_medians_only_when_every_row_has_a_prompt(tmp_path):
    full = compare_dirs(write_run(tmp_path, "one", [make_row("a", prompt=100)]), write_run(tmp_path, "two", [make_row("a", prompt=120)]))
    assert warning_codes(full) == ["prompt-diff"]
    assert "one: 100" in full.warnings[0].message and "two: 120" in full.warnings[0].message

    partial = compare_dirs(
        write_run(tmp_path, "three", [make_row("a", prompt=100)]),
        write_run(tmp_path, "four", [make_row("a", prompt=120), make_row("a", prompt=MISSING)]),
    )
    assert partial.cases[0].parity == "prompt-missing"
    assert "prompt-diff" not in warning_codes(partial)


def test_it_says_how_many_failed_rows_were_excluded(tmp_path):
    comparison = compare_dirs(
        write_run(tmp_path, "one", [make_row("a"), make_row("a", ok=False), make_row("b", ok=False)]),
        write_run(tmp_path, "two", [make_row("a"), make_row("b")]),
    )
    (warning,) = comparison.warnings
    assert warning.code == "failed-rows" and warning.run == "one"
    assert warning.message == "one: 2 failed rows excluded from medians (a: 1, b: 1)"
    assert "- one: 2 failed rows excluded from medians" in render_compare(comparison)


def test_it_gives_same_named_directories_distinct_labels(tmp_path):
    (tmp_path / "x").mkdir()
    (tmp_path / "y").mkdir()
    comparison = compare_dirs(write_run(tmp_path / "x", "run", [make_row("a")]), write_run(tmp_path / "y", "run", [make_row("a")]))
    labels = [r.label for r in comparison.runs]
    assert len(set(labels)) == 2 and all(label.endswith("run") for label in labels)


# ---------------------------------------------------------------- CLI


def test_it_prints_markdown_and_exits_zero(tmp_path, monkeypatch, capsys):
    one = write_run(tmp_path, "one", [make_row("a")])
    two = write_run(tmp_path, "two", [make_row("a")])
    assert run_cli(["compare", str(one), str(two)], monkeypatch) == 0
    out = capsys.readouterr().out  # not a terminal: Markdown
    assert out.startswith("# Compare")
    assert "**a · prefill parity: comparable**" in out
    assert "| one | 1/1 | 1.0000 | 0.1000 |" in out


def test_it_prints_json_with_a_stable_shape(tmp_path, monkeypatch, capsys):
    one = write_run(tmp_path, "one", [make_row("a", cached=0), make_row("a", cached=0, wall=3.0)])
    two = write_run(tmp_path, "two", [make_row("a", cached=0, pack=("pack-a", "2.0.0"))])
    assert run_cli(["compare", "--json", str(one), str(two)], monkeypatch) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["format_version"] == 2
    assert data["parity_statuses"] == list(PARITY_STATUSES)
    assert [r["label"] for r in data["runs"]] == ["one", "two"]
    assert data["runs"][1]["packs"] == [{"id": "pack-a", "version": "2.0.0"}]
    (case,) = data["cases"]
    assert case["case"] == "a" and case["parity"] == "comparable"
    first = case["runs"][0]
    assert first["run"] == "one" and first["n"] == 2 and first["ok"] == 2
    assert first["medians"]["wall_s"] == 2.0 and first["medians"]["prefill_tps"] == 1000.0
    assert first["prompt_tokens_med"] == 100 and first["cached_prompt_tokens_med"] == 0
    assert [w["code"] for w in data["warnings"]] == ["pack-version-diff"]


def test_it_reports_every_bad_input_and_exits_2(tmp_path, monkeypatch, capsys):
    good = write_run(tmp_path, "good", [make_row("a")])
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "run.jsonl").write_text('{"case": "a", "ok": true}\nnot json\n')
    code = run_cli(["compare", str(good), str(bad), str(tmp_path / "absent")], monkeypatch)
    err = capsys.readouterr().err.splitlines()
    assert code == 2
    assert len(err) == 2
    assert "line 2" in err[0] and "absent" in err[1]
    assert not any("Traceback" in line for line in err)


def test_it_rejects_rows_it_cannot_group(tmp_path, monkeypatch, capsys):
    one = write_run(tmp_path, "one", [{"ok": True}, {"case": "a", "ok": "yes"}])
    two = write_run(tmp_path, "two", [make_row("a")])
    assert run_cli(["compare", str(one), str(two)], monkeypatch) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == [
        f"{one / 'run.jsonl'}: row 1: case: missing or not a non-empty string",
        f"{one / 'run.jsonl'}: row 2: ok: missing or not a boolean",
    ]


def test_it_needs_two_result_directories(tmp_path, monkeypatch, capsys):
    one = write_run(tmp_path, "one", [make_row("a")])
    assert run_cli(["compare", str(one)], monkeypatch) == 2
    assert "at least two" in capsys.readouterr().err


def test_its_numbers_never_come_from_raw_or_run_metadata(tmp_path):
    one = write_run(tmp_path, "one", [make_row("a")])
    two = write_run(tmp_path, "two", [make_row("a")])
    (two / "run-metadata.json").write_text('{"runtime": {"name": "x"}, "complete": true}')
    (two / "raw").mkdir()
    (two / "raw" / "a.response.json").write_text("not json at all")
    with_extra = compare_dirs(one, two).to_dict()
    assert "runtime" not in json.dumps(with_extra)
    (two / "run-metadata.json").unlink()
    without = compare_dirs(one, two).to_dict()
    # Only the run's completeness is read from run-metadata.json.
    with_extra["runs"][1]["complete"] = None
    assert without == with_extra


def test_it_raises_for_no_result_dirs():
    with pytest.raises(BenchpackError):
        compare_runs([])


class CountingRows(list):
    """A run's rows that count how often they are walked: compare must walk
    them a fixed number of times, not once per case (a run with thousands of
    cases made compare, and the review page that calls it, quadratic)."""

    walks = 0

    def __iter__(self):
        CountingRows.walks += 1
        return super().__iter__()


def test_compare_walks_each_runs_rows_a_fixed_number_of_times(tmp_path):
    from benchpack.results.resultdir import ResultDir

    def walks_for(cases):
        runs = [ResultDir(tmp_path / f"run-{n}", rows=CountingRows(make_row(f"case-{i}") for i in range(cases)))
                for n in range(2)]
        CountingRows.walks = 0
        compare_runs(runs, noise=False)
        return CountingRows.walks

    assert walks_for(200) == walks_for(20)


# ---------------------------------------------------------------- the seed's contracts (issue 18)


def test_every_case_table_shows_wall_total_prompt_and_cached_prompt_with_coverage(tmp_path):
    """What explains a parity verdict is on the page: wall time, total tok/s, the prompt-token median and
    the cached-prompt median with how many ok rows reported it."""
    one = write_run(tmp_path, "one", [make_row("a", prompt=100, cached=0, wall=1.5, total=40.0)] * 3)
    two = write_run(tmp_path, "two", [make_row("a", prompt=120, cached=MISSING, wall=2.5, total=30.0),
                                      make_row("a", prompt=120, cached=8, wall=2.5, total=30.0)])
    markdown = render_compare(compare_dirs(one, two))
    assert "a · prefill parity: prompt-diff" in markdown
    assert table_cell(markdown, "a", "one", "wall s").startswith("1.5000")
    assert table_cell(markdown, "a", "two", "wall s").startswith("2.5000")
    assert table_cell(markdown, "a", "one", "total tok/s") == "40.0"
    assert table_cell(markdown, "a", "two", "total tok/s") == "30.0"
    assert table_cell(markdown, "a", "one", "prompt tok") == "100"
    assert table_cell(markdown, "a", "two", "prompt tok") == "120"
    assert table_cell(markdown, "a", "one", "cached prompt") == "0 (3/3 rows)"
    assert table_cell(markdown, "a", "two", "cached prompt") == "8 (1/2 rows)"


def test_a_multi_run_report_shows_the_same_columns(tmp_path, monkeypatch, capsys):
    one = write_run(tmp_path, "one", [make_row("a", wall=1.5, total=40.0)])
    two = write_run(tmp_path, "two", [make_row("a", wall=2.5, total=30.0)])
    monkeypatch.setattr(cli, "COMMAND_MODULES", ["benchpack.commands.report"])
    assert cli.main(["report", str(one), str(two)]) == 0
    out = capsys.readouterr().out
    assert table_cell(out, "a", "two", "total tok/s") == "30.0"
    assert table_cell(out, "a", "one", "cached prompt") == "0 (1/1 rows)"


@pytest.mark.parametrize("content", ["", "\n", "  \n\t\n"])
def test_compare_refuses_an_empty_or_whitespace_only_run_jsonl_with_one_line(tmp_path, monkeypatch, capsys, content):
    good = write_run(tmp_path, "good", [make_row("a")])
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "run.jsonl").write_text(content)
    assert run_cli(["compare", str(good), str(empty)], monkeypatch) == 2
    err = capsys.readouterr().err
    assert err.splitlines() == [f"{empty / 'run.jsonl'}: has no rows (empty or whitespace only)"]


def test_compare_counts_rows_whose_reads_could_not_place_their_tokens(tmp_path):
    placed = {"ok": True, "case": "c", "pack": {"id": "p", "version": "1"}, "adapter": "a", "model": "m",
              "timing": {"wall_s": 0.1, "ttft_s": 0.02, "tpot_s": 0.002, "placement": None}}
    burst = {**placed, "timing": {"wall_s": 0.1, "ttft_s": 0.09, "tpot_s": None,
                                  "placement": {"ttft": "upper", "tpot": "one_read", "reader_late_s": 0.0412}}}
    run = write_run(tmp_path, "busy", [placed, burst, placed])
    comparison = compare_dirs(run)
    (warning,) = [w for w in comparison.warnings if w.code == "unplaced-timing"]
    assert warning.message.startswith("busy: 1 of 3 ok rows has no TPOT")
    assert "the reader was 41.2 ms late" in warning.message
    assert not [w for w in compare_dirs(write_run(tmp_path, "calm", [placed])).warnings if w.code == "unplaced-timing"]
