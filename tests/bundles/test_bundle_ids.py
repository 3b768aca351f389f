"""Identifiers the registry stores and routes are in one grammar (benchpack/ids.py), checked by bundle
validation ("ids") and pack loading (issue 22 §1)."""

from __future__ import annotations

import json

import pytest

from benchpack import ids
from benchpack.bundles.create import create_bundle, validate_bundle
from benchpack.cli import main
from tests.bundles.test_bundles_validate import _rewrite
from tests.hostile import row, write_result_dir


@pytest.fixture
def bundle(tmp_path):
    return create_bundle([write_result_dir(tmp_path / "src" / "run-a")], tmp_path / "bundle", "self-reported")


def _with_rows(bundle, *rows):
    _rewrite(bundle, "runs/run-a/run.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    return validate_bundle(bundle)


def test_a_case_id_with_a_slash_is_refused_by_bundle_validate_naming_field_and_line(bundle, capsys):
    report = _with_rows(bundle, row(), row(case="fix/repo"))
    errors = [f for f in report.errors if f.code == "row.case-id"]
    assert len(errors) == 1 and errors[0].line == 2 and errors[0].path == "runs/run-a/run.jsonl"
    assert errors[0].message.startswith("case: not a valid case id ('/' is not allowed)")
    assert main(["registry", "bundle", "validate", str(bundle)]) == 1
    out = capsys.readouterr().out
    assert "row.case-id" in out and "'/' is not allowed" in out and "INVALID" in out


@pytest.mark.parametrize("field, value, code", [
    ("case", "a b", "row.case-id"),
    ("case", "-lead", "row.case-id"),
    ("case", "x" * 101, "row.case-id"),
    ("case", "x" * 129, "row.schema"),  # the row schema's maxLength says it first
    ("case", "dotted.case", "row.case-id"),
    ("model", "", "row.model-id"),
    ("model", "/abs/path", "row.model-id"),
    ("model", "org//name", "row.model-id"),
    ("model", "org/../etc", "row.model-id"),
    ("model", "a\nb", "row.model-id"),
    ("model", "m" * 256, "row.schema"),
    ("pack", {"id": "a/b", "version": "1"}, "row.pack-id"),
])
def test_each_id_outside_the_grammar_is_refused(bundle, field, value, code):
    report = _with_rows(bundle, row(**{field: value}))
    assert code in {f.code for f in report.errors}, report.errors


@pytest.mark.parametrize("model", ["smollm2-135m", "qwen2.5-coder:7b", "mlx-community/Qwen2.5-0.5B-Instruct-4bit",
                                   "hf.co/bartowski/Llama-3.2-1B-Instruct-GGUF:Q4_K_M", "gpt-oss:20b",
                                   "_private/x@rev+1=2", "m" * 255])
def test_real_model_ids_are_valid(bundle, model):
    assert _with_rows(bundle, row(model=model)).ok


def test_a_bad_value_is_reported_once_at_its_first_line(bundle):
    report = _with_rows(bundle, row(), *[row(case="a b", repetition=n) for n in range(1, 50)])
    assert [(f.code, f.line) for f in report.errors] == [("row.case-id", 2)]


def test_a_runtime_name_outside_the_grammar_is_refused(bundle):
    _rewrite(bundle, "runs/run-a/run-metadata.json", json.dumps({"runtime": {"name": "llama.cpp\n<b>"}}))
    report = validate_bundle(bundle)
    assert [f.code for f in report.errors] == ["metadata.runtime-name"]


def test_edge_values_are_valid():
    assert ids.is_valid("case id", "0") and ids.is_valid("case id", "A" + "-_9" * 32 + "zzz")
    assert not ids.is_valid("case id", "A" + "-_9" * 32 + "zzzz")  # 101: its lane board key would not fit
    assert ids.is_valid("board key", "A" + "-_9" * 32 + "zzz" + " @concurrency=256")
    assert ids.is_valid("board key", "A" + "-_9" * 32 + "zzz" + " @rate=1.23457e-300/s")
    assert ids.is_valid("board key", "short @rate=2.5/s") and ids.is_valid("board key", "x @depth=1048576")
    assert not ids.is_valid("board key", "short @rate=2/s/../x")
    assert ids.is_valid("runtime name", "LM Studio (beta) 0.3_1+x-y")
    assert not ids.is_valid("runtime name", "trailing ")


def test_pack_loading_refuses_a_case_id_with_a_slash_or_too_long(tmp_path):
    from benchpack.errors import PackError
    from benchpack.packs.loader import load_pack

    for bad in ("a/b", "c" * 101):
        pack = tmp_path / bad.replace("/", "_")[:20]
        pack.mkdir()
        (pack / "benchpack.toml").write_text(
            '[pack]\nid = "p"\nversion = "1.0.0"\ndescription = "d"\n\n'
            f'[[cases]]\nid = "{bad}"\nkind = "chat"\nprompt = "hi"\n')
        with pytest.raises(PackError) as raised:
            load_pack(pack)
        assert "cases[0].id" in str(raised.value) and ("not a valid id" in str(raised.value)
                                                       or "at most 100 characters" in str(raised.value))
