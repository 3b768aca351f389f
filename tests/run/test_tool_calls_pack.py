"""The bundled tool-calls pack through the runner, with every adapter that sends tools, against the scripted
endpoint answering each case with a tool call in that adapter's own API format: identical verdicts."""

from __future__ import annotations

import pytest

from benchpack.errors import ConfigError
from benchpack.packs.loader import load_pack, resolve_pack_path
from benchpack.refserver.server import RefServer
from benchpack.run.runner import RunOptions, run_pack

ADAPTERS = ("openai-chat", "anthropic-messages", "openai-responses")

# One scripted answer per case, picked by a phrase of its prompt: two right calls, a wrong argument,
# a text answer with no call, and a call that names the wrong tool.
SCRIPT = [
    {"match": "weather be like in Oslo", "content": "Checking.",
     "tool_calls": [{"name": "get_weather", "arguments": {"city": "Oslo", "unit": "celsius", "days": 3}}]},
    {"match": "Japanese yen", "tool_calls": [{"name": "convert_currency",
                                              "arguments": {"amount": 25, "from": "EUR", "to": "JPY"}}]},
    {"match": "login button", "tool_calls": [{"name": "create_ticket", "arguments": {
        "title": "Login button does nothing", "priority": "urgent", "labels": ["bug", "frontend"]}}]},
    {"match": "parse_manifest", "content": "It is probably in src/manifest.py."},
]
VERDICTS = {
    "weather-pick": {"mode": "tool-call", "passed": True},
    "currency-required": {"mode": "tool-call", "passed": False, "error": "arguments.amount is 25, expected 250"},
    "ticket-forced": {"mode": "tool-call", "passed": True},
    "search-among-four": {"mode": "tool-call", "passed": False, "error": "no tool call in the response"},
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    pack = load_pack(resolve_pack_path("tool-calls"))
    rows = {}
    with RefServer(responses=SCRIPT, ttft_s=0.005, itl_s=0.001) as srv:
        for adapter in ADAPTERS:
            out = tmp_path_factory.mktemp("tool-calls") / adapter
            outcome = run_pack(pack, RunOptions(adapter=adapter, model="ref", endpoint=srv.url, out=out,
                                                probe_server=False))
            rows[adapter] = {row["case"]: row for row in outcome.rows}
        bodies = {(r["path"], r["body"].get("tool_choice").__repr__()) for r in srv.log()}
    return rows, bodies


def test_the_three_adapters_give_identical_verdicts_on_every_case(runs):
    rows, _ = runs
    for adapter in ADAPTERS:
        assert {case: row["scoring"] for case, row in rows[adapter].items()} == VERDICTS, adapter
        assert all(row["ok"] for row in rows[adapter].values())


def test_rows_record_the_structured_calls_and_the_time_to_the_first_tool_token(runs):
    rows, _ = runs
    for adapter in ADAPTERS:
        weather = rows[adapter]["weather-pick"]
        assert [(c["name"], c["arguments"]) for c in weather["tool_calls"]] == \
            [("get_weather", {"city": "Oslo", "unit": "celsius", "days": 3})]
        # Text ("Checking.") came first, the call after it; when both arrive in one read (a server stalled by
        # load writes them together) they share that read's time, never the call first.
        assert weather["timing"]["ttft_tool_s"] >= weather["timing"]["ttft_s"] > 0
        text_only = rows[adapter]["search-among-four"]
        assert text_only["tool_calls"] == [] and text_only["timing"]["ttft_tool_s"] is None


def test_each_adapter_sent_the_tools_in_its_own_shape(runs):
    _, bodies = runs
    choices = {path: set() for path, _ in bodies}
    for path, choice in bodies:
        choices[path].add(choice)
    assert "{'type': 'function', 'function': {'name': 'create_ticket'}}" in choices["/v1/chat/completions"]
    assert "{'type': 'tool', 'name': 'create_ticket'}" in choices["/v1/messages"]
    assert "{'type': 'any'}" in choices["/v1/messages"]
    assert "{'type': 'function', 'name': 'create_ticket'}" in choices["/v1/responses"]


def test_an_adapter_without_tools_is_refused_before_any_request(tmp_path):
    pack = load_pack(resolve_pack_path("tool-calls"))
    with pytest.raises(ConfigError, match="ollama-generate cannot send native tool calls"):
        run_pack(pack, RunOptions(adapter="ollama-generate", model="m", endpoint="http://127.0.0.1:9",
                                  out=tmp_path / "out"))
    assert not (tmp_path / "out").exists()
