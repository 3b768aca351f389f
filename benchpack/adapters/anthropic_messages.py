"""`anthropic-messages`: Anthropic's Messages API (`POST /v1/messages`), plain or streamed.

The endpoint is the full messages URL (`http://127.0.0.1:8080/v1/messages`);
a base URL ending in `/v1` gets `/messages` appended and a bare
`http://host:port` gets `/v1/messages`. The API requires `max_tokens`: a
pack without one sends `DEFAULT_MAX_TOKENS`.

Streamed events (`event:` names, each data object carrying its `type`):
`message_start` (model, input usage), `content_block_start` (a text,
thinking or `tool_use` block), `content_block_delta` (`text_delta`,
`thinking_delta`, `input_json_delta`), `content_block_stop`,
`message_delta` (stop_reason, output usage), `message_stop`; `ping` and
`error` may come between. Token counts are the API's own: the prompt is
`input_tokens` + `cache_read_input_tokens` + `cache_creation_input_tokens`
(Anthropic's `input_tokens` counts only what was not read from or written
to the cache), `cached_prompt` is `cache_read_input_tokens`, output is
`output_tokens`. `finish_reason` is the API's `stop_reason` (`end_turn`,
`max_tokens`, `tool_use`, …).
"""

from __future__ import annotations

import json
from typing import Any

from benchpack.adapters.base import AdapterRequest, StreamTrace, int_or_none, text_or_none
from benchpack.adapters.events import SSEJsonAdapter, StreamState, api_url, common_body, error_event, merge_usage, usage_tokens
from benchpack.adapters.tools import anthropic_tools
from benchpack.adapters.transport import header_lines

DEFAULT_MAX_TOKENS = 4096


def messages_url(endpoint: str) -> str:
    return api_url(endpoint, "/messages")


def build_body(request: AdapterRequest) -> dict:
    body: dict[str, Any] = {"model": request.model, "max_tokens": DEFAULT_MAX_TOKENS,
                            "messages": [{"role": "user", "content": request.prompt}]}
    common_body(request, body, "max_tokens", anthropic_tools)
    if request.extra_body:
        body.update(request.extra_body)
    return body


def _take_block(block: Any, index: Any, state: StreamState, trace: StreamTrace, now: float) -> None:
    if not isinstance(block, dict):
        return
    kind = block.get("type")
    if kind == "tool_use":
        state.tools.add(index, call_id=block.get("id"), name=block.get("name"))
        trace.add_tool_chunk(now)
        trace.token_times.append(now)
    elif kind == "text" and block.get("text"):
        state.content.append(block["text"])
        trace.content_times.append(now)
        trace.token_times.append(now)
    elif kind == "thinking" and block.get("thinking"):
        state.reasoning.append(block["thinking"])
        trace.token_times.append(now)


def _take_event(obj: dict, state: StreamState, trace: StreamTrace, now: float) -> None:
    kind = obj.get("type")
    if kind == "content_block_delta":
        delta = obj.get("delta")
        if not isinstance(delta, dict):
            return
        dtype = delta.get("type")
        if dtype == "text_delta":
            text = delta.get("text")
            if text:
                state.content.append(text)
                trace.content_times.append(now)
                trace.token_times.append(now)
        elif dtype == "input_json_delta":
            fragment = delta.get("partial_json")
            if fragment:
                state.tools.add(obj.get("index"), arguments=fragment)
                trace.add_tool_chunk(now)
                trace.token_times.append(now)
        elif dtype == "thinking_delta":
            text = delta.get("thinking")
            if text:
                state.reasoning.append(text)
                trace.token_times.append(now)
    elif kind == "content_block_start":
        _take_block(obj.get("content_block"), obj.get("index"), state, trace, now)
    elif kind == "message_start":
        message = obj.get("message") if isinstance(obj.get("message"), dict) else {}
        state.model = text_or_none(message.get("model"))
        merge_usage(state, message.get("usage"))
    elif kind == "message_delta":
        delta = obj.get("delta") if isinstance(obj.get("delta"), dict) else {}
        state.finish_reason = text_or_none(delta.get("stop_reason")) or state.finish_reason
        merge_usage(state, obj.get("usage"))
    elif kind == "message_stop":
        state.done = True
    elif kind == "error" or (obj.get("error") and kind is None):
        state.error = error_event(obj)


def _take_whole(obj: dict, state: StreamState) -> None:
    if obj.get("type") == "error" or (obj.get("error") and not obj.get("content")):
        state.error = error_event(obj, "error response")
    state.model = text_or_none(obj.get("model"))
    state.finish_reason = text_or_none(obj.get("stop_reason"))
    merge_usage(state, obj.get("usage"))
    for index, block in enumerate(obj.get("content") or ()):
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            state.content.append(block.get("text") or "")
        elif kind == "thinking":
            state.reasoning.append(block.get("thinking") or "")
        elif kind == "tool_use":
            state.tools.add(index, call_id=block.get("id"), name=block.get("name"))
            state.tools.complete(index, _json_text(block.get("input")))


def _json_text(value: Any) -> str:
    return json.dumps(value) if value is not None else ""


def _tokens(state: StreamState) -> dict:
    usage = state.usage or {}
    uncached = int_or_none(usage.get("input_tokens"))
    read = int_or_none(usage.get("cache_read_input_tokens"))
    written = int_or_none(usage.get("cache_creation_input_tokens"))
    prompt = None if uncached is None else uncached + (read or 0) + (written or 0)
    return usage_tokens(state.usage, prompt, int_or_none(usage.get("output_tokens")), read, state.timings)


# The API version Anthropic's Messages API requires on every request (it answers 400 without one);
# llama-server ignores it. No key is ever sent: a local endpoint needs none.
ANTHROPIC_VERSION = "2023-06-01"


class AnthropicMessagesAdapter(SSEJsonAdapter):
    id = "anthropic-messages"
    request_headers = (("anthropic-version", ANTHROPIC_VERSION),)
    _header_lines = header_lines(request_headers)
    endpoint_url = staticmethod(messages_url)
    request_body = staticmethod(build_body)
    take_event = staticmethod(_take_event)
    take_whole = staticmethod(_take_whole)
    tokens = staticmethod(_tokens)
    stream_end = "message_stop"
