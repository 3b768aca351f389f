import json
from pathlib import Path

import pytest

from benchpack.errors import BenchpackError, ConfigError
from benchpack.results.resultdir import load_result_dir, read_rows
from benchpack.run.runner import RunOutcome, run_pack
from tests.run.test_runner_support import ScriptedAdapter, failed_result, make_pack, ok_result, options


class RecordingProgress:
    def __init__(self):
        self.events = []

    def started(self, total_executions):
        self.events.append(("started", total_executions))

    def execution_started(self, case_id, repetition, warmup, **lane):
        self.events.append(("start", case_id, repetition, warmup))

    def execution_finished(self, case_id, repetition, warmup, row, **lane):
        self.events.append(("finish", case_id, repetition, warmup, None if row is None else row["ok"]))

    def finished(self):
        self.events.append(("finished",))


def raw_names(out: Path) -> list[str]:
    return sorted(p.name for p in (out / "raw").iterdir())


def test_it_writes_one_row_and_legacy_raw_names_for_a_single_repetition(tmp_path):
    pack = make_pack(tmp_path, ["capital"], scoring='[scoring]\nmode = "contains"\nexpected = "Paris"\n')
    outcome = run_pack(pack, options(tmp_path), adapter=ScriptedAdapter())

    assert outcome.all_ok and not outcome.interrupted
    assert raw_names(outcome.out) == ["capital.request.json", "capital.response.json"]
    [row] = read_rows(outcome.out / "run.jsonl")
    assert "repetition" not in row and "error" not in row
    assert row["pack"] == {"id": "test-pack", "version": "1.2.3"}
    assert (row["case"], row["adapter"], row["model"]) == ("capital", "openai-chat", "test-model")
    assert row["endpoint"] == "http://127.0.0.1:9/v1"
    assert row["scoring"] == {"mode": "contains", "passed": True}
    assert row["raw"] == {"request_path": "raw/capital.request.json", "response_path": "raw/capital.response.json"}
    assert row["resources"] == {"memory_mb": None, "gpu_memory_mb": None}
    assert row["timing"]["wall_s"] == 0.25 and row["timing"]["ttfb_s"] is None
    assert json.loads((outcome.out / row["raw"]["response_path"]).read_text()) == {"text": "Paris is the capital."}


def test_it_names_warmups_and_repetitions_and_keeps_warmups_out_of_rows(tmp_path):
    pack = make_pack(tmp_path, ["short", "long"], warmup=2, repetitions=3)
    adapter = ScriptedAdapter()
    progress = RecordingProgress()
    outcome = run_pack(pack, options(tmp_path), progress, adapter=adapter)

    assert len(adapter.requests) == 2 * (2 + 3)
    rows = read_rows(outcome.out / "run.jsonl")
    assert [(r["case"], r["repetition"]) for r in rows] == [
        ("short", 1), ("short", 2), ("short", 3), ("long", 1), ("long", 2), ("long", 3)
    ]
    assert rows[1]["raw"]["request_path"] == "raw/short.rep-002.request.json"
    expected = {
        f"{case}.{kind}-{n:03d}.{part}.json"
        for case in ("short", "long")
        for kind, count in (("warmup", 2), ("rep", 3))
        for n in range(1, count + 1)
        for part in ("request", "response")
    }
    assert set(raw_names(outcome.out)) == expected
    assert progress.events[0] == ("started", 10)
    assert progress.events[1:5] == [
        ("start", "short", 1, True), ("finish", "short", 1, True, None),
        ("start", "short", 2, True), ("finish", "short", 2, True, None),
    ]
    assert progress.events[-1] == ("finished",)
    summary = (outcome.out / "summary.md").read_text()
    assert "| short#3 |" in summary and "warmup" not in summary


def test_it_records_a_failing_endpoint_and_goes_on(tmp_path):
    pack = make_pack(tmp_path, ["a", "b", "c"])
    adapter = ScriptedAdapter({1: failed_result, 2: RuntimeError("socket exploded")})
    outcome = run_pack(pack, options(tmp_path), adapter=adapter)

    assert not outcome.all_ok
    rows = read_rows(outcome.out / "run.jsonl")
    assert [r["ok"] for r in rows] == [False, False, True]
    assert rows[0]["error"] == "connection refused"
    assert "RuntimeError: socket exploded" in rows[1]["error"]
    assert json.loads((outcome.out / "raw/a.response.json").read_text()) == {"error": "connection refused"}
    assert "| a | openai-chat | test-model | no |" in (outcome.out / "summary.md").read_text()


def test_it_keeps_the_rows_done_when_interrupted(tmp_path, monkeypatch):
    import os

    synced, real_fsync = [], os.fsync
    sizes = []

    def fsync(fd):
        synced.append(fd)
        sizes.append(os.fstat(fd).st_size)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    pack = make_pack(tmp_path, ["a", "b", "c", "d"])
    outcome = run_pack(pack, options(tmp_path), adapter=ScriptedAdapter({3: KeyboardInterrupt}))
    # Ctrl-C between batched fsyncs: the rows written so far are fsynced on the way out, all of them.
    assert sizes and sizes[-1] == (outcome.out / "run.jsonl").stat().st_size

    assert outcome.interrupted
    rows = read_rows(outcome.out / "run.jsonl")
    assert [r["case"] for r in rows] == ["a", "b"]
    assert [r["case"] for r in outcome.rows] == ["a", "b"]
    summary = (outcome.out / "summary.md").read_text()
    assert "| a |" in summary and "| b |" in summary and "| c |" not in summary


@pytest.mark.parametrize(
    "overrides, field",
    [
        ({"endpoint": "localhost:8080"}, "--endpoint"),
        ({"model": " "}, "--model"),
        ({"openai_stream_usage": "sometimes"}, "--openai-stream-usage"),
        ({"run_metadata": {"runtime": "llama"}}, "runtime"),
    ],
)
def test_it_refuses_invalid_options_before_creating_the_output_dir(tmp_path, overrides, field):
    adapter = ScriptedAdapter()
    with pytest.raises(ConfigError) as info:
        run_pack(make_pack(tmp_path), options(tmp_path, **overrides), adapter=adapter)
    assert field in [p.field for p in info.value.problems]
    assert not (tmp_path / "out").exists()
    assert adapter.requests == []


def test_it_refuses_llm_judge_scoring_before_any_request(tmp_path):
    pack = make_pack(tmp_path, scoring='[scoring]\nmode = "llm-judge"\n')
    adapter = ScriptedAdapter()
    with pytest.raises(BenchpackError):
        run_pack(pack, options(tmp_path), adapter=adapter)
    assert not (tmp_path / "out").exists() and adapter.requests == []


def test_it_refuses_an_unknown_adapter_id_before_creating_the_output_dir(tmp_path):
    with pytest.raises(ConfigError):
        run_pack(make_pack(tmp_path), options(tmp_path, adapter="carrier-pigeon"))
    assert not (tmp_path / "out").exists()


def test_it_writes_hardware_and_run_metadata_beside_the_rows(tmp_path):
    metadata = {"runtime": {"name": "llama-server"}, "notes": "quiet machine"}
    outcome = run_pack(make_pack(tmp_path), options(tmp_path, run_metadata=metadata), adapter=ScriptedAdapter())
    result = load_result_dir(outcome.out)
    assert result.hardware["hostname"] == "test-host"
    assert result.run_metadata["runtime"] == {"name": "llama-server"}
    assert result.run_metadata["notes"] == "quiet machine"
    assert result.run_metadata["complete"] is True and result.run_metadata["incomplete_reason"] is None
    assert result.run_metadata["model"] == {"requested": "test-model"}
    assert "Runtime: `llama-server`" in (outcome.out / "summary.md").read_text()


def test_it_runs_into_an_existing_empty_directory(tmp_path):
    (tmp_path / "out").mkdir()
    outcome = run_pack(make_pack(tmp_path), options(tmp_path), adapter=ScriptedAdapter())
    assert len(read_rows(outcome.out / "run.jsonl")) == 2


def test_it_returns_an_outcome_naming_the_directory(tmp_path):
    outcome = run_pack(make_pack(tmp_path), options(tmp_path), adapter=ScriptedAdapter())
    assert isinstance(outcome, RunOutcome) and outcome.out == tmp_path / "out"


def test_a_failed_request_is_never_scored_as_passed(tmp_path):
    # A stream that broke after "Paris" arrived: the partial text satisfies
    # the check, but the row failed, so it must not count as a pass.
    def broken_mid_stream(request):
        result = ok_result(request, "Paris is")
        result.ok, result.error = False, "connection closed mid-stream after 3 events"
        return result

    pack = make_pack(tmp_path, ["capital"], scoring='[scoring]\nmode = "contains"\nexpected = "Paris"\n')
    outcome = run_pack(pack, options(tmp_path), adapter=ScriptedAdapter(default=broken_mid_stream))
    [row] = read_rows(outcome.out / "run.jsonl")
    assert row["ok"] is False
    assert row["scoring"]["mode"] == "contains" and row["scoring"]["passed"] is False
    assert "request failed" in row["scoring"]["error"]


def test_a_repo_task_verdict_on_a_failed_request_is_not_a_pass(tmp_path):
    from benchpack.run.scoring import never_passed_when_failed

    verdict = {"mode": "verify-script", "passed": True}
    assert never_passed_when_failed(verdict, request_ok=True) is verdict
    assert never_passed_when_failed(verdict, request_ok=False)["passed"] is False
    assert never_passed_when_failed(None, request_ok=False) is None


def test_the_base_cases_ask_for_short_turns_once_for_the_whole_sequence(tmp_path, monkeypatch):
    """Not twice per request: the runner's thread holds them from the first request to the last."""
    from benchpack.measurement import sched

    calls, slices = [], []
    monkeypatch.setattr(sched._sys, "get", lambda: (56, 0, 0, 0, 0, 2_800_000, 0, 0, 0, 1024))
    monkeypatch.setattr(sched._sys, "set", lambda attr: calls.append(attr[5]) or True)

    class SliceRecordingAdapter(ScriptedAdapter):
        def run(self, request):
            slices.append(getattr(sched._held, "slice_ns", None))
            return super().run(request)

    pack = make_pack(tmp_path, ["a", "b"], warmup=1, repetitions=3)
    run_pack(pack, options(tmp_path), adapter=SliceRecordingAdapter())
    assert slices == [sched.SHORT_SLICE_NS] * 8  # every request, warmups too, ran with short turns
    assert calls == [sched.SHORT_SLICE_NS, 2_800_000]  # asked once, restored once
    assert getattr(sched._held, "slice_ns", None) is None


def test_the_outcome_s_rows_are_run_jsonl_s_as_read_back_and_the_summary_reads_it_once(tmp_path, monkeypatch, capsys):
    """The closing summary takes the rows the runner read back (h40d): run.jsonl is parsed once after the
    run, and the summary printed is the one a fresh read of the directory gives."""
    from benchpack.commands import run as run_command
    from benchpack.results import resultdir

    outcome = run_pack(make_pack(tmp_path), options(tmp_path), adapter=ScriptedAdapter())
    assert outcome.rows_from_disk is True and outcome.rows == read_rows(outcome.out / "run.jsonl")
    reads = []
    real = resultdir.read_rows
    monkeypatch.setattr(resultdir, "read_rows", lambda path: reads.append(path) or real(path))
    run_command.print_summary(outcome)
    once = capsys.readouterr().out
    assert reads == []
    outcome.rows_from_disk = False  # rows kept in memory only: the directory is read as before
    run_command.print_summary(outcome)
    assert capsys.readouterr().out == once and reads == [outcome.out / "run.jsonl"]
