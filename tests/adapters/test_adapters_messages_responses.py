"""anthropic-messages and openai-responses against the scripted endpoint (real sockets, real SSE events),
and against hand-written streams for the shapes the endpoint does not make."""

from __future__ import annotations

import json

import httpx
import pytest

from benchpack.adapters import AdapterRequest, get_adapter
from benchpack.adapters.anthropic_messages import AnthropicMessagesAdapter, messages_url
from benchpack.adapters.openai_responses import OpenAIResponsesAdapter, responses_url
from benchpack.refserver.server import RefServer

NEW = ("anthropic-messages", "openai-responses")
TOOLS = [{"name": "get_weather", "description": "Weather for a city",
          "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                         "required": ["city"]}}]
CALL = {"name": "get_weather", "arguments": {"city": "Paris", "days": 3}, "id": "call_1"}


@pytest.fixture(scope="module")
def srv():
    with RefServer(responses=["The capital of France is Paris."], ttft_s=0.02, itl_s=0.004, cached_tokens=2) as server:
        yield server


def request(srv, stream=True, **fields) -> AdapterRequest:
    return AdapterRequest(model="m", prompt="What is the capital of France ?", endpoint=srv.url, temperature=0,
                          max_tokens=64, stream=stream, **fields)


def test_the_urls_follow_the_chat_rule():
    assert messages_url("http://h:1") == "http://h:1/v1/messages"
    assert messages_url("http://h:1/v1/") == "http://h:1/v1/messages"
    assert responses_url("http://h:1/v1") == "http://h:1/v1/responses"
    assert responses_url("http://h:1/v1/responses") == "http://h:1/v1/responses"


@pytest.mark.parametrize("adapter_id", NEW)
@pytest.mark.parametrize("stream", [True, False])
def test_text_tokens_and_cached_tokens_come_from_each_apis_own_usage(srv, adapter_id, stream):
    srv.reset()
    result = get_adapter(adapter_id).run(request(srv, stream))
    assert result.ok, result.error
    assert result.output_text == "The capital of France is Paris."
    # 7 prompt words; 2 of them reported cached (Anthropic: input_tokens 5 + cache_read_input_tokens 2).
    assert result.tokens == {"prompt": 7, "output": 6, "cached_prompt": 2, "source": "usage"}
    assert result.served_model == "m"
    assert result.finish_reason == ("end_turn" if adapter_id == "anthropic-messages" else "completed")
    assert result.tool_calls is None
    if stream:
        record = srv.log()[0]
        timing = result.timing
        assert 0.02 <= timing["ttft_s"] < 0.2 and timing["ttft_tool_s"] is None
        # The same tokens the server wrote at 4 ms intervals.
        sent = record["content_times"]
        assert len(sent) == 6
        if sent[-1] - sent[0] >= 0.01:
            assert timing["tpot_s"] == pytest.approx((sent[-1] - sent[0]) / 5, rel=0.25)
        else:  # a stalled server catches up on its schedule in one burst (seen at load: 6 tokens in 36 µs);
            # in one read the spacing cannot be told and the row says so rather than inventing one; split over
            # reads, the gaps are the burst's, not the schedule's 4 ms
            if timing["tpot_s"] is None:
                assert timing["placement"]["tpot"] == "one_read", timing
            else:
                assert timing["tpot_s"] < 0.002, timing
    else:
        assert result.timing["ttft_s"] is None and result.timing["tpot_s"] is None


@pytest.mark.parametrize("adapter_id", NEW)
def test_the_budget_is_each_apis_own_field_and_a_cut_reply_says_so(srv, adapter_id):
    srv.reset()
    result = get_adapter(adapter_id).run(AdapterRequest(model="m", prompt="hi", endpoint=srv.url, max_tokens=3,
                                                        stream=True))
    body = srv.log()[0]["body"]
    assert result.ok and result.tokens["output"] == 3
    if adapter_id == "anthropic-messages":
        assert body["max_tokens"] == 3 and result.finish_reason == "max_tokens"
    else:
        assert body["max_output_tokens"] == 3 and "max_tokens" not in body
        assert result.finish_reason == "max_output_tokens"


@pytest.mark.parametrize("adapter_id", ("openai-chat", *NEW))
@pytest.mark.parametrize("stream", [True, False])
def test_tool_calls_are_sent_in_each_apis_shape_and_assembled_from_fragments(adapter_id, stream):
    with RefServer(responses=[{"content": "Let me check.", "tool_calls": [CALL]}], ttft_s=0.01, itl_s=0.003) as srv:
        result = get_adapter(adapter_id).run(request(srv, stream, tools=TOOLS, tool_choice={"name": "get_weather"}))
        body = srv.log()[0]["body"]
    assert result.ok, result.error
    assert result.tool_calls == [{"id": "call_1", "name": "get_weather", "arguments": {"city": "Paris", "days": 3}}]
    assert result.output_text == "Let me check."
    if adapter_id == "openai-chat":
        assert body["tools"][0] == {"type": "function", "function": TOOLS[0]}
        assert body["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}
    elif adapter_id == "anthropic-messages":
        assert body["tools"][0] == {"name": "get_weather", "description": "Weather for a city",
                                    "input_schema": TOOLS[0]["parameters"]}
        assert body["tool_choice"] == {"type": "tool", "name": "get_weather"}
    else:
        assert body["tools"][0] == {"type": "function", **TOOLS[0]}
        assert body["tool_choice"] == {"type": "function", "name": "get_weather"}
    if stream:
        timing = result.timing
        # Text first (3 tokens), then the call: its first token is never before the first text token. Equal
        # when both came in one network read (a loaded machine's late reader: CI saw it), where the call is
        # placed no earlier than the text (tests/adapters/test_placement.py).
        assert timing["ttft_tool_s"] >= timing["ttft_s"] > 0
        # Every token on every channel counts: 3 text + name + argument fragments.
        assert result.tokens["output"] == 3 + 1 + len(json.dumps(CALL["arguments"]).split())


def test_neutral_tool_choice_words_become_each_apis_words():
    from benchpack.adapters.tools import anthropic_tools, chat_tools, responses_tools

    assert anthropic_tools(TOOLS, "required")["tool_choice"] == {"type": "any"}
    assert anthropic_tools(TOOLS, "auto")["tool_choice"] == {"type": "auto"}
    assert chat_tools(TOOLS, "required")["tool_choice"] == "required"
    assert responses_tools(TOOLS, "none")["tool_choice"] == "none"
    assert "tool_choice" not in responses_tools(TOOLS, None)


def mock(adapter_cls, body: bytes, status: int = 200):
    transport = httpx.MockTransport(lambda r: httpx.Response(status, content=iter([body[i:i + 5] for i in range(0, len(body), 5)]),
                                                             headers={"content-type": "text/event-stream"}))
    return adapter_cls(client=httpx.Client(transport=transport))


def ev(name: str, obj: dict) -> bytes:
    return f"event: {name}\ndata: {json.dumps({'type': name, **obj})}\n\n".encode()


def test_an_anthropic_error_event_ends_the_request_with_its_message():
    body = ev("message_start", {"message": {"model": "m", "usage": {"input_tokens": 3}}}) + \
        ev("error", {"error": {"type": "overloaded_error", "message": "Overloaded"}})
    result = mock(AnthropicMessagesAdapter, body).run(AdapterRequest(model="m", prompt="x", endpoint="http://x.test",
                                                                    stream=True))
    assert not result.ok and "Overloaded" in result.error


def test_a_stream_cut_before_its_final_event_is_an_error():
    body = ev("response.created", {"response": {"model": "m"}}) + \
        ev("response.output_text.delta", {"item_id": "a", "delta": "Hi"})
    result = mock(OpenAIResponsesAdapter, body).run(AdapterRequest(model="m", prompt="x", endpoint="http://x.test",
                                                                  stream=True))
    assert not result.ok and "without response.completed" in result.error
    assert result.output_text == "Hi"


def test_malformed_tool_arguments_are_kept_as_text():
    body = (ev("message_start", {"message": {"model": "m", "usage": {"input_tokens": 3}}})
            + ev("content_block_start", {"index": 0, "content_block": {"type": "tool_use", "id": "t", "name": "f"}})
            + ev("content_block_delta", {"index": 0, "delta": {"type": "input_json_delta", "partial_json": '{"a": '}})
            + ev("content_block_stop", {"index": 0})
            + ev("message_delta", {"delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 2}})
            + ev("message_stop", {}))
    result = mock(AnthropicMessagesAdapter, body).run(AdapterRequest(model="m", prompt="x", endpoint="http://x.test",
                                                                    stream=True, tools=TOOLS))
    assert result.ok and result.tool_calls == [{"id": "t", "name": "f", "arguments": '{"a": '}]
    assert result.finish_reason == "tool_use" and result.tokens["output"] == 2


@pytest.mark.parametrize("client", ["plain", "httpx"])
@pytest.mark.parametrize("stream", [True, False])
def test_anthropic_messages_sends_the_api_version_anthropic_requires(srv, client, stream):
    """Anthropic's API answers 400 without `anthropic-version`; llama-server ignores it. Sent on the plain
    client's path (an http:// endpoint) and on the httpx path (an injected client, as a runner host's);
    the other adapters send no such header."""
    from benchpack.adapters.httpclient import LeanClient

    made = None if client == "plain" else LeanClient()
    for adapter_id in ("anthropic-messages", "openai-responses", "openai-chat"):
        srv.reset()
        result = get_adapter(adapter_id, made).run(request(srv, stream))
        assert result.ok, result.error
        [record] = srv.log()
        expected = "2023-06-01" if adapter_id == "anthropic-messages" else None
        assert record["headers"].get("anthropic-version") == expected, adapter_id
        assert record["headers"]["content-type"] == "application/json"
