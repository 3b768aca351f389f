"""The golden-file switch (tests/service/api/golden.py) never makes a golden test unable to fail: under CI it is
refused, and where it rewrites a file with a different answer the test still fails."""

from __future__ import annotations

import pytest

from tests.service.api import golden


@pytest.fixture
def files(tmp_path, monkeypatch):
    monkeypatch.setattr(golden, "GOLDEN", tmp_path)
    (tmp_path / "answer.json").write_text('{\n  "a": 1\n}\n')
    return tmp_path


def test_under_ci_the_switch_is_a_failure_even_for_a_matching_answer(files, monkeypatch):
    monkeypatch.setattr(golden, "REGENERATE", True)
    monkeypatch.setenv("CI", "true")
    with pytest.raises(AssertionError, match="set under CI"):
        golden.assert_matches_golden("answer", {"a": 1})
    assert (files / "answer.json").read_text() == '{\n  "a": 1\n}\n'  # and nothing was rewritten


def test_regenerating_a_different_answer_rewrites_the_file_and_fails(files, monkeypatch):
    monkeypatch.setattr(golden, "REGENERATE", True)
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(AssertionError, match="rewritten with a different answer"):
        golden.assert_matches_golden("answer", {"a": 2})
    assert (files / "answer.json").read_text() == '{\n  "a": 2\n}\n'
    golden.assert_matches_golden("answer", {"a": 2})  # run again: the same answer passes


def test_without_the_switch_a_different_answer_fails_and_the_file_stays(files, monkeypatch):
    monkeypatch.setattr(golden, "REGENERATE", False)
    with pytest.raises(AssertionError, match="differs from"):
        golden.assert_matches_golden("answer", {"a": 2})
    assert (files / "answer.json").read_text() == '{\n  "a": 1\n}\n'
