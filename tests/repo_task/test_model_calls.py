"""Summaries of harness-owned model-call JSONL: allowlisted fields only, unsafe lines counted, never echoed."""

import json

import pytest

from benchpack.repo_task.model_calls import is_safe_line, summarize_model_calls

MINIMAL = {"schema_version": 1, "sequence": 1, "model": "test-model", "ok": True}


def test_it_accepts_the_recommended_minimal_line_and_every_allowlisted_field():
    full = {**MINIMAL, "started_at": "2026-05-01T10:00:00Z", "ended_at": "2026-05-01T10:00:01Z", "duration_s": 1.25,
            "adapter": "openai-chat", "endpoint": "local llama", "response_format": "json", "token_budget_field": "max_tokens",
            "finish_reason": "stop", "prompt_tokens": 10, "output_tokens": 5, "cached_prompt_tokens": 0, "error": None}
    assert is_safe_line(MINIMAL) and is_safe_line(full)


@pytest.mark.parametrize(
    "change",
    [
        {"prompt": "the full prompt"},  # not allowlisted
        {"headers": {"Authorization": "Bearer x"}},
        {"schema_version": 2}, {"schema_version": True}, {"sequence": 0}, {"sequence": True}, {"ok": "yes"},
        {"model": ""}, {"model": "x" * 201}, {"model": "tab\there"}, {"model": "line\u2028sep"}, {"model": "nbsp\u00a0x"},
        {"endpoint": "http://127.0.0.1:8080/v1"}, {"endpoint": "host?api_key=secret"}, {"endpoint": "user@host"},
        {"duration_s": -1}, {"duration_s": float("nan")}, {"duration_s": "1s"},
        {"prompt_tokens": -1}, {"output_tokens": 1.5}, {"cached_prompt_tokens": True}, {"error": "x\ny"},
    ],
)
def test_it_rejects_lines_outside_the_safe_shape(change):
    assert not is_safe_line({**MINIMAL, **change})


def test_it_rejects_non_objects():
    assert not is_safe_line([MINIMAL]) and not is_safe_line("text") and not is_safe_line(None)


def test_it_aggregates_safe_lines_and_counts_unsafe_ones_without_echoing_them(tmp_path):
    log = tmp_path / "rep-001.model-calls.jsonl"
    lines = [
        json.dumps({**MINIMAL, "adapter": "openai-chat", "duration_s": 0.5, "prompt_tokens": 10, "output_tokens": 3,
                    "finish_reason": "stop"}),
        json.dumps({**MINIMAL, "sequence": 2, "ok": False, "error": "timeout", "model": "other", "duration_s": 0.25}),
        json.dumps({**MINIMAL, "sequence": 3, "api_key": "sk-SECRET-VALUE"}),
        json.dumps({**MINIMAL, "sequence": 4, "endpoint": "https://user:SECRETPASS@example.com/v1?key=SECRETQ"}),
        "{not json SECRET-IN-GARBAGE",
        "",
    ]
    log.write_bytes(("\n".join(lines) + "\n").encode() + b"\xff\xfe SECRET-BYTES\n")
    summary = summarize_model_calls([log, tmp_path / "missing.jsonl"])
    assert "SECRET" not in json.dumps(summary) and "timeout" not in json.dumps(summary)
    assert summary == {
        "files": 1, "calls": 6, "valid": 2, "invalid": 4, "ok": 1, "failed": 1, "errors": 1,
        "models": ["other", "test-model"], "adapters": ["openai-chat"], "endpoints": [], "response_formats": [],
        "token_budget_fields": [], "finish_reasons": ["stop"], "duration_s": 0.75,
        "prompt_tokens": 10, "output_tokens": 3, "cached_prompt_tokens": None,
    }


def test_it_summarizes_nothing_when_no_log_exists(tmp_path):
    summary = summarize_model_calls([tmp_path / "absent.jsonl"])
    assert summary["files"] == 0 and summary["calls"] == 0 and summary["duration_s"] is None
