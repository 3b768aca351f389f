"""`openai-chat`: OpenAI-compatible `/v1/chat/completions`, plain or streamed.

The endpoint is the full chat-completions URL
(`http://127.0.0.1:8081/v1/chat/completions`). A base URL ending in `/v1`
gets `/chat/completions` appended, and a bare `http://host:port` gets
`/v1/chat/completions`; any other path is used as given.

Streaming follows D-014: `openai_stream_usage="include"` sends
`stream_options.include_usage=true`, `"omit"` leaves `stream_options` out.
A server that rejects the option yields an `ok=False` result carrying the
server's error; the request is never retried with a different shape.
"""

from __future__ import annotations

from typing import Any

from benchpack.adapters.base import AdapterRequest, StreamTrace, empty_tokens, int_or_none, text_or_none
from benchpack.adapters.events import (
    SSEJsonAdapter,
    StreamState,
    api_url,
    common_body,
    error_event,
    parse_event_data,
    usage_tokens,
)
from benchpack.adapters.tools import chat_tools

__all__ = ["OpenAIChatAdapter", "build_body", "chat_completions_url", "parse_event_data"]


def chat_completions_url(endpoint: str) -> str:
    return api_url(endpoint, "/chat/completions")


def build_body(request: AdapterRequest) -> dict:
    body: dict[str, Any] = {
        "model": request.model,
        "messages": [{"role": "user", "content": request.prompt}],
    }
    common_body(request, body, "max_tokens", chat_tools)
    if request.stream and request.openai_stream_usage == "include":
        body["stream_options"] = {"include_usage": True}
    if request.extra_body:
        body.update(request.extra_body)
    return body


def _take_chunk(obj: dict, state: StreamState, trace: StreamTrace, now: float) -> None:
    err = obj.get("error")
    if err and not obj.get("choices"):
        state.error = error_event(obj)
        return
    if state.model is None:
        state.model = text_or_none(obj.get("model"))
    usage = obj.get("usage")
    if usage:
        state.usage = usage
    timings = obj.get("timings")
    if timings:
        state.timings = timings
    choices = obj.get("choices")
    if not choices:
        return
    choice = choices[0]
    delta = choice.get("delta")
    if delta:
        content = delta.get("content")
        reasoning = delta.get("reasoning_content") or delta.get("reasoning")
        tool_calls = delta.get("tool_calls")
        if content:
            state.content.append(content)
            trace.content_times.append(now)
        if reasoning:
            state.reasoning.append(reasoning)
        if tool_calls:
            _take_tool_deltas(tool_calls, state, trace, now)
        if content or reasoning or tool_calls:
            trace.token_times.append(now)
    finish = choice.get("finish_reason")
    if finish:
        state.finish_reason = finish


def _take_tool_deltas(tool_calls: Any, state: StreamState, trace: StreamTrace, now: float) -> None:
    # delta.tool_calls[i]: {index, id?, function: {name?, arguments?}}; `index` keys the call across chunks.
    carried = False
    for position, delta in enumerate(tool_calls if isinstance(tool_calls, list) else ()):
        if not isinstance(delta, dict):
            continue
        function = delta.get("function") if isinstance(delta.get("function"), dict) else {}
        key = delta.get("index", position)
        name, arguments = function.get("name"), function.get("arguments")
        state.tools.add(key, call_id=delta.get("id"), name=name, arguments=arguments)
        carried = carried or bool(name) or bool(arguments)
    if carried:
        trace.add_tool_chunk(now)


def _tokens(usage: dict | None, timings: dict | None) -> dict:
    if isinstance(usage, dict) and (usage.get("prompt_tokens") is not None or usage.get("completion_tokens") is not None):
        details = usage.get("prompt_tokens_details")
        cached = int_or_none(details.get("cached_tokens")) if isinstance(details, dict) else None
        return usage_tokens(usage, int_or_none(usage.get("prompt_tokens")), int_or_none(usage.get("completion_tokens")),
                            cached, timings)
    tokens = empty_tokens()
    if isinstance(timings, dict) and (timings.get("prompt_n") is not None or timings.get("predicted_n") is not None):
        # llama-server's prompt_n counts only the tokens it had to process;
        # the prompt is those plus the ones reused from its cache.
        cached = int_or_none(timings.get("cache_n"))
        processed = int_or_none(timings.get("prompt_n"))
        tokens["prompt"] = processed + (cached or 0) if processed is not None else None
        tokens["output"] = int_or_none(timings.get("predicted_n"))
        tokens["cached_prompt"] = cached
        tokens["source"] = "timings"
    return tokens


class OpenAIChatAdapter(SSEJsonAdapter):
    id = "openai-chat"
    endpoint_url = staticmethod(chat_completions_url)
    request_body = staticmethod(build_body)
    take_event = staticmethod(_take_chunk)
    stream_end = "[DONE] or finish_reason"

    @staticmethod
    def finished(state: StreamState) -> bool:
        return state.done or bool(state.finish_reason)

    @staticmethod
    def take_whole(obj: dict, state: StreamState) -> None:
        if obj.get("error") and not obj.get("choices"):
            state.error = error_event(obj, "error response")
        state.usage = obj.get("usage") or None
        state.timings = obj.get("timings") or None
        state.model = text_or_none(obj.get("model"))
        choices = obj.get("choices") or []
        first = choices[0] if choices and isinstance(choices[0], dict) else {}
        state.finish_reason = text_or_none(first.get("finish_reason"))
        message = first.get("message") or {}
        state.content.append(message.get("content") or "")
        state.reasoning.append(message.get("reasoning_content") or message.get("reasoning") or "")
        for index, call in enumerate(message.get("tool_calls") or ()):
            if isinstance(call, dict):
                function = call.get("function") if isinstance(call.get("function"), dict) else {}
                state.tools.add(index, call_id=call.get("id"), name=function.get("name"),
                                arguments=function.get("arguments"))

    @staticmethod
    def tokens(state: StreamState) -> dict:
        return _tokens(state.usage, state.timings)
