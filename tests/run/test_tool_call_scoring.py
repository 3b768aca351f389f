"""tool-call scoring: judged from the structured calls only."""

from __future__ import annotations

import msgspec

from benchpack.packs.loader import Scoring
from benchpack.run.scoring import score

BASE = Scoring(mode="tool-call", expected=None, pattern=None, schema=None, schema_path=None, script=None,
               script_resolved=None, timeout_s=None, environment=None, raw={}, tool_name="f",
               tool_arguments={"n": 1, "flag": True})
TOOLS = ({"name": "f", "parameters": {"type": "object", "properties": {"n": {"type": "integer"}},
                                      "required": ["n"]}},)


def call(arguments, name="f"):
    return [{"id": "1", "name": name, "arguments": arguments}]


def test_a_matching_call_passes_and_text_plays_no_part():
    assert score(BASE, "I would call f", call({"n": 1, "flag": True}), TOOLS) == {"mode": "tool-call", "passed": True}
    assert score(BASE, '{"name": "f", "arguments": {"n": 1, "flag": true}}', [], TOOLS)["passed"] is False


def test_each_failure_says_what_was_wrong():
    assert score(BASE, "", None)["error"] == "no tool call in the response"
    assert score(BASE, "", call({}, name="g"))["error"] == "no call to 'f' (called 'g')"
    assert score(BASE, "", call('{"n": '))["error"].startswith("arguments are not a JSON object")
    assert score(BASE, "", call({"n": 1.0, "flag": 1}), ())["error"] == "arguments.flag is 1, expected True"
    assert score(BASE, "", call({"flag": True}))["error"] == "arguments lack 'n'"


def test_arguments_are_checked_against_the_schema_else_the_tools_own_parameters():
    assert "is not of type 'integer'" in score(BASE, "", call({"n": "1", "flag": True}), TOOLS)["error"]
    strict = msgspec.structs.replace(BASE, tool_arguments=None, schema={"type": "object", "required": ["m"]})
    assert "'m' is a required property" in score(strict, "", call({"n": 1}), TOOLS)["error"]
