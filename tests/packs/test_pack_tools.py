"""[[tools]], a case's tools / tool_choice, and tool-call scoring in the manifest: read, and refused with one
line naming the field when wrong."""

from __future__ import annotations

import pytest

from benchpack.errors import PackError
from benchpack.packs.loader import load_pack

HEAD = """
[pack]
id = "t"
version = "1.0.0"

[[tools]]
name = "get_weather"
description = "Weather"
parameters = { type = "object", properties = { city = { type = "string" } }, required = ["city"] }
"""


def write(tmp_path, text):
    (tmp_path / "benchpack.toml").write_text(HEAD + text, encoding="utf-8")
    return tmp_path


def problems(tmp_path, text) -> list[str]:
    with pytest.raises(PackError) as info:
        load_pack(write(tmp_path, text))
    return [str(p) for p in info.value.problems]


def test_a_case_gets_the_neutral_definitions_it_names(tmp_path):
    pack = load_pack(write(tmp_path, """
[[cases]]
id = "c"
prompt = "weather?"
tools = ["get_weather"]
tool_choice = { name = "get_weather" }
scoring = { mode = "tool-call", name = "get_weather", arguments = { city = "Oslo" } }
"""))
    case = pack.cases[0]
    assert case.tools == ({"name": "get_weather", "description": "Weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}},)
    assert case.tool_choice == {"name": "get_weather"}
    assert case.scoring.tool_name == "get_weather" and case.scoring.tool_arguments == {"city": "Oslo"}


@pytest.mark.parametrize("text, field, reason", [
    ('tools = ["nope"]', "cases[0].tools", "names no [[tools]] entry: nope"),
    ('tools = ["get_weather"]\ntool_choice = "sometimes"', "cases[0].tool_choice", "must be one of auto"),
    ('tool_choice = "auto"', "cases[0].tool_choice", "needs tools"),
    ('tools = ["get_weather"]\nscoring = { mode = "tool-call" }', "cases[0].scoring.name", "is required"),
    ('scoring = { mode = "tool-call", name = "get_weather" }', "cases[0].scoring.mode", "needs tools on the case"),
    ('tools = ["get_weather"]\nscoring = { mode = "contains", expected = "x", name = "get_weather" }',
     "cases[0].scoring.name", "only allowed with mode = \"tool-call\""),
])
def test_bad_tool_declarations_name_the_field(tmp_path, text, field, reason):
    found = problems(tmp_path, f'[[cases]]\nid = "c"\nprompt = "p"\n{text}\n')
    assert any(f": {field}: " in p and reason in p for p in found), found


def test_a_tool_whose_parameters_are_not_a_schema_is_refused(tmp_path):
    found = problems(tmp_path, """
[[tools]]
name = "bad name!"

[[tools]]
name = "f"
parameters = { type = "object", properties = 3 }

[[cases]]
id = "c"
prompt = "p"
""")
    assert any("tools[1].name" in p for p in found) and any("tools[2].parameters" in p for p in found), found
