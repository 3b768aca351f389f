import json
from pathlib import Path

import pytest

from benchpack.adapters.base import AdapterResult
from benchpack.results.resultdir import load_result_dir
from benchpack.results.rows import RowLog, append_row, build_row, render_summary, write_summary
from tests.data_paths import REAL_RESULTS

REAL_DIRS = sorted(p for p in REAL_RESULTS.iterdir() if p.is_dir())


class PackInfo:
    def __init__(self, id, version, description=""):
        self.id, self.version, self.description = id, version, description


def result(ok=True, error=None, timing=None, tokens=None):
    return AdapterResult(ok, error, "out", "", timing or {"wall_s": 1.5}, tokens or {"prompt": 3}, None, {}, None)


def row_for(res, **kwargs):
    values = dict(pack=PackInfo("p", "1"), case_id="c", adapter_id="openai-chat", endpoint="http://h/v1",
                  model="m", result=res, scoring=None, raw={"request_path": "a", "response_path": "b"})
    values.update(kwargs)
    return build_row(**values)


def test_it_builds_rows_with_every_documented_field_in_order():
    row = row_for(result(), repetition=2)
    assert list(row) == ["pack", "case", "adapter", "endpoint", "model", "ok", "timing", "tokens",
                         "backend", "resources", "scoring", "raw", "repetition"]
    assert row["timing"] == {"wall_s": 1.5, "ttft_s": None, "prefill_tps": None, "decode_tps": None,
                             "total_tps": None, "ttfb_s": None, "ttft_any_s": None, "tpot_s": None,
                             "ttft_tool_s": None, "rate_source": None, "placement": None}
    assert row["tokens"] == {"prompt": 3, "output": None, "cached_prompt": None, "source": None}


def test_it_puts_the_error_only_on_failed_rows():
    assert "error" not in row_for(result(ok=True, error="ignored"))
    assert row_for(result(ok=False, error="HTTP 500"))["error"] == "HTTP 500"
    assert row_for(result(ok=False))["error"]


def test_it_appends_rows_as_json_lines(tmp_path):
    path = tmp_path / "run.jsonl"
    with path.open("a") as fh:
        append_row(fh, {"case": "a"})
        append_row(fh, {"case": "ü"})
    assert [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()] == [{"case": "a"}, {"case": "ü"}]


def _counting_fsync(monkeypatch) -> list:
    import os

    synced, real = [], os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: synced.append(fd) or real(fd))
    return synced


def test_a_row_log_hands_every_row_to_the_os_at_once_and_fsyncs_in_batches(tmp_path, monkeypatch):
    synced = _counting_fsync(monkeypatch)
    path = tmp_path / "run.jsonl"
    clock = [100.0]
    monkeypatch.setattr("benchpack.results.rows.time.monotonic", lambda: clock[0])
    log = RowLog(path, sync_interval_s=0.5)
    for n in range(3):
        log.append({"case": "ü", "n": n})
        clock[0] += 0.125
        # readable by another process at once (flushed to the OS), before any fsync
        assert [json.loads(line)["n"] for line in path.read_text(encoding="utf-8").splitlines()] == list(range(n + 1))
    assert synced == []
    clock[0] += 0.125  # 0.5 s since the log opened: the next row is fsynced with those before it
    log.append({"case": "a", "n": 3})
    assert len(synced) == 1
    log.append({"case": "a", "n": 4})
    assert len(synced) == 1
    log.close()
    assert len(synced) == 2  # the rest on close
    log.close()
    assert len(synced) == 2
    with path.open("a") as fh:  # the same lines append_row writes
        append_row(fh, {"case": "ü", "n": 5})
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[0] == json.dumps({"case": "ü", "n": 0}, ensure_ascii=False)
    assert [json.loads(line)["n"] for line in lines] == [0, 1, 2, 3, 4, 5]


def test_a_row_log_fsyncs_on_the_way_out_of_an_exception(tmp_path, monkeypatch):
    synced = _counting_fsync(monkeypatch)
    with pytest.raises(KeyboardInterrupt):
        with RowLog(tmp_path / "run.jsonl", sync_interval_s=3600) as log:
            log.append({"case": "a"})
            raise KeyboardInterrupt
    assert len(synced) == 1 and json.loads((tmp_path / "run.jsonl").read_text()) == {"case": "a"}


@pytest.mark.parametrize("result_dir", REAL_DIRS, ids=lambda p: p.name)
def test_it_reproduces_the_historical_summary_from_real_rows(result_dir):
    """Header, host lines and the first seven table columns match the old summary.md byte for byte."""
    old = (result_dir / "summary.md").read_text().splitlines()
    loaded = load_result_dir(result_dir)
    pack_id, version = old[0][2:].rsplit(" (", 1)
    new = render_summary(PackInfo(pack_id, version.rstrip(")"), old[2]), loaded.rows, loaded.hardware, None)
    new_lines = new.splitlines()
    assert new_lines[:8] == old[:8]
    old_table = [cells(line) for line in old if line.startswith("| ")]
    new_table = [cells(line)[:7] for line in new_lines if line.startswith("| ")]
    assert new_table == old_table and len(old_table) == len(loaded.rows) + 1


def cells(line):
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def test_it_marks_repetitions_failures_and_unscored_rows_in_the_summary(tmp_path):
    rows = [
        row_for(result(), repetition=1, scoring={"mode": "contains", "passed": True}),
        row_for(result(ok=False, error="connection refused", timing={"wall_s": None}), repetition=2,
                scoring={"mode": "regex", "passed": False}),
        row_for(result(), case_id="plain"),
    ]
    path = write_summary(tmp_path, PackInfo("p", "1", "Desc"), rows, {"hostname": "h", "platform": "linux"}, None)
    text = path.read_text()
    assert text.startswith("# p (1)\n\nDesc\n\nHost: `h` (linux)\n")
    assert "| c#1 | openai-chat | m | yes | 1.500 | — | contains: pass |" in text
    assert "| c#2 | openai-chat | m | no | — | — | regex: fail |" in text
    assert "| plain | openai-chat | m | yes | 1.500 | — | — |" in text
    assert "## Errors\n\n- c#2: connection refused" in text


def test_it_escapes_table_cells_and_appends_extra_sections(tmp_path):
    rows = [row_for(result(), model="a|b")]
    text = render_summary(PackInfo("p", "1"), rows, None, None, ["## Extra\n\nmore"])
    assert "| a\\|b |" in text
    assert text.rstrip().endswith("## Extra\n\nmore")
    assert "Host: `unknown` (unknown)" in text


def test_it_lists_gpus_with_vram_when_known():
    hardware = {"hostname": "h", "platform": "linux", "gpus": [{"model": "RTX 4090", "vram_mb": 24564},
                                                               {"model": "Apple M5", "vram_mb": None}]}
    assert "GPU: RTX 4090 (24564 MB), Apple M5" in render_summary(PackInfo("p", "1"), [], hardware, None)
