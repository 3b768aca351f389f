from __future__ import annotations

import json
from pathlib import Path

import pytest
from msgspec.structs import replace

from benchpack.errors import PackError
from benchpack.packs.loader import Scoring, load_pack
from benchpack.run.scoring import check_runnable, score

BLANK = Scoring(
    mode="none", expected=None, pattern=None, schema=None, schema_path=None, script=None,
    script_resolved=None, timeout_s=None, environment=None, raw={},
)


def scoring(mode: str, **fields) -> Scoring:
    return replace(BLANK, mode=mode, raw={"mode": mode}, **fields)


TOOL_SCHEMA = {
    "type": "object",
    "required": ["name", "arguments"],
    "additionalProperties": False,
    "properties": {
        "name": {"const": "get_weather"},
        "arguments": {
            "type": "object",
            "required": ["city", "unit", "days"],
            "additionalProperties": False,
            "properties": {
                "city": {"type": "string", "minLength": 1, "maxLength": 40},
                "unit": {"enum": ["celsius", "fahrenheit"]},
                "days": {"type": "integer", "minimum": 1, "maximum": 7},
            },
        },
    },
}


def test_it_records_nothing_for_no_scoring_or_mode_none():
    assert score(None, "anything") is None
    assert score(scoring("none"), "anything") is None


def test_it_scores_contains_case_sensitively():
    assert score(scoring("contains", expected="Paris"), "The capital is Paris.") == {"mode": "contains", "passed": True}
    assert score(scoring("contains", expected="Paris"), "the capital is paris") == {"mode": "contains", "passed": False}


def test_it_scores_regex_with_search_and_no_implicit_flags():
    skeleton = scoring("regex", pattern=r"DDS_WRAP_PLAN[\s\S]*Inspect:")
    assert score(skeleton, "intro\nDDS_WRAP_PLAN\nInspect: x") == {"mode": "regex", "passed": True}
    assert score(scoring("regex", pattern="^b"), "a\nb")["passed"] is False  # no MULTILINE
    assert score(scoring("regex", pattern="(?m)^b"), "a\nb")["passed"] is True
    assert score(scoring("regex", pattern="a.b"), "a\nb")["passed"] is False  # no DOTALL


def test_it_raises_value_error_for_regex_without_pattern():
    with pytest.raises(ValueError):
        score(scoring("regex"), "x")


def test_it_scores_equals_after_trimming_whitespace():
    assert score(scoring("equals", expected="42"), "  42\n") == {"mode": "equals", "passed": True}
    assert score(scoring("equals", expected="42"), "42.") == {"mode": "equals", "passed": False}


def test_it_passes_json_that_matches_the_schema():
    output = json.dumps({"name": "get_weather", "arguments": {"city": "Oslo", "unit": "celsius", "days": 3}})
    assert score(scoring("json-schema", schema=TOOL_SCHEMA), output) == {"mode": "json-schema", "passed": True}


@pytest.mark.parametrize(
    "instance, error",
    [
        ({"name": "get_weather"}, "$: 'arguments' is a required property"),
        ({"name": "get_weather", "arguments": {"city": "Oslo", "unit": "kelvin", "days": 3}}, "$.arguments.unit: 'kelvin' is not one of ['celsius', 'fahrenheit']"),
        ({"name": "get_weather", "arguments": {"city": "Oslo", "unit": "celsius", "days": 9}}, "$.arguments.days: 9 is greater than the maximum of 7"),
        ({"name": "get_weather", "arguments": {"city": "", "unit": "celsius", "days": 1}}, "$.arguments.city: '' should be non-empty"),
        ({"name": "get_weather", "arguments": {"city": "Oslo", "unit": "celsius", "days": 1}, "extra": 1}, "$: Additional properties are not allowed ('extra' was unexpected)"),
        ({"name": "get_weather", "arguments": {"city": "Oslo", "unit": "celsius", "days": True}}, "$.arguments.days: True is not of type 'integer'"),
    ],
)
def test_it_fails_schema_mismatches_with_the_first_error(instance, error):
    assert score(scoring("json-schema", schema=TOOL_SCHEMA), json.dumps(instance)) == {
        "mode": "json-schema",
        "passed": False,
        "error": error,
    }


@pytest.mark.parametrize(
    "schema, value",
    [
        ({"const": 1}, True),
        ({"const": 0}, False),
        ({"enum": [1, 2]}, True),
        ({"enum": [0]}, False),
        ({"const": [1]}, [True]),
        ({"const": {"a": 0}}, {"a": False}),
        ({"type": "number"}, True),
    ],
)
def test_it_keeps_booleans_distinct_from_numbers(schema, value):
    assert score(scoring("json-schema", schema=schema), json.dumps(value))["passed"] is False


def test_it_treats_equal_json_numbers_as_equal():
    assert score(scoring("json-schema", schema={"const": 1}), "1.0")["passed"] is True


@pytest.mark.parametrize("output", ["", "not json", "```json\n{}\n```", '{"a": NaN}', "{'a': 1}"])
def test_it_fails_invalid_json_output_without_crashing(output):
    result = score(scoring("json-schema", schema={"type": "object"}), output)
    assert result["passed"] is False and result["error"].startswith("output is not valid JSON")


def test_it_ignores_unknown_schema_keywords():
    assert score(scoring("json-schema", schema={"x-note": "hi", "type": "array"}), "[]")["passed"] is True


def test_it_refuses_modes_that_are_not_computed_from_output_text():
    for mode in ("verify-script", "llm-judge"):
        with pytest.raises(ValueError):
            score(scoring(mode), "x")


def write(root: Path, manifest: str) -> Path:
    root.mkdir()
    (root / "benchpack.toml").write_text(manifest)
    return root


HEAD = '[pack]\nid = "p"\nversion = "1"\n'


def test_it_refuses_llm_judge_packs_before_running(tmp_path):
    pack = load_pack(
        write(
            tmp_path / "p",
            HEAD
            + '[[cases]]\nid = "a"\nprompt = "x"\n'
            + '[[cases]]\nid = "b"\nprompt = "x"\nscoring = { mode = "llm-judge" }\n'
            + '[scoring]\nmode = "contains"\nexpected = "x"\n',
        )
    )
    with pytest.raises(PackError) as info:
        check_runnable(pack)
    assert info.value.lines() == [
        "benchpack.toml: cases[1].scoring.mode: llm-judge scoring is reserved and not implemented (case b); nothing was run"
    ]


def test_it_names_the_pack_scoring_table_when_llm_judge_is_inherited(tmp_path):
    pack = load_pack(write(tmp_path / "p", HEAD + '[[cases]]\nid = "a"\nprompt = "x"\n[scoring]\nmode = "llm-judge"\n'))
    with pytest.raises(PackError) as info:
        check_runnable(pack)
    assert info.value.lines()[0].startswith("benchpack.toml: scoring.mode: llm-judge")


def test_it_lets_deterministic_packs_run(tmp_path):
    pack = load_pack(write(tmp_path / "p", HEAD + '[[cases]]\nid = "a"\nprompt = "x"\n[scoring]\nmode = "regex"\npattern = "x"\n'))
    assert check_runnable(pack) is None
