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

import json
from typing import Any
from urllib.parse import urlsplit

import msgspec

from benchpack.adapters.base import (
    AdapterRequest,
    AdapterResult,
    StreamTrace,
    compute_timing,
    empty_tokens,
    int_or_none,
    text_or_none,
)
from benchpack.adapters.sse import SSEParser
from benchpack.adapters.transport import ClientOwningAdapter, describe_http_error, read_timed

_DONE = b"[DONE]"
_decode = msgspec.json.Decoder().decode


def parse_event_data(data: bytes) -> Any:
    """json.loads for one event's data, at a fraction of the cost per chunk.

    msgspec decodes straight from bytes; what it refuses but json accepts
    (NaN, Infinity) falls back to json.loads, which also words real errors.
    """
    try:
        return _decode(data)
    except msgspec.DecodeError:
        return json.loads(data)


def chat_completions_url(endpoint: str) -> str:
    base = endpoint.rstrip("/")
    if base.endswith("/chat/completions"):
        return base
    if base.endswith("/v1"):
        return base + "/chat/completions"
    if urlsplit(base).path in ("", "/"):
        return base + "/v1/chat/completions"
    return base


def build_body(request: AdapterRequest) -> dict:
    body: dict[str, Any] = {
        "model": request.model,
        "messages": [{"role": "user", "content": request.prompt}],
    }
    if request.temperature is not None:
        body["temperature"] = request.temperature
    if request.max_tokens is not None:
        body["max_tokens"] = request.max_tokens
    body["stream"] = bool(request.stream)
    if request.stream and request.openai_stream_usage == "include":
        body["stream_options"] = {"include_usage": True}
    if request.extra_body:
        body.update(request.extra_body)
    return body


class _Stream:
    """What a chat-completions stream has said so far."""

    __slots__ = ("content", "reasoning", "events", "usage", "timings", "finish_reason", "model", "done", "error")

    def __init__(self) -> None:
        self.content: list[str] = []
        self.reasoning: list[str] = []
        self.events: list[Any] = []
        self.usage: dict | None = None
        self.timings: dict | None = None
        self.finish_reason: str | None = None
        self.model: str | None = None  # the "model" the server names in its chunks
        self.done = False
        self.error: str | None = None


def _take_chunk(obj: Any, state: _Stream, trace: StreamTrace, now: float) -> None:
    if not isinstance(obj, dict):
        return
    err = obj.get("error")
    if err and not obj.get("choices"):
        state.error = describe_http_error(200, obj).replace("HTTP 200", "error event in stream", 1)
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
        if content:
            state.content.append(content)
            trace.content_times.append(now)
        if reasoning:
            state.reasoning.append(reasoning)
        if content or reasoning or delta.get("tool_calls"):
            trace.token_times.append(now)
    finish = choice.get("finish_reason")
    if finish:
        state.finish_reason = finish


def _take_reads(parser: SSEParser, state: _Stream, trace: StreamTrace, times: list[float], reads: list[bytes],
               start: int) -> int:
    """Parse reads[start:], each event stamped with its read's arrival time; returns how many reads are taken."""
    datas, index = parser.feed_reads(reads[start:])
    json_events = len(datas) - 1 if datas and datas[-1] == _DONE else len(datas)
    try:
        objs = list(map(_decode, datas[:json_events]))  # one C-level pass for the usual batch
    except msgspec.DecodeError:  # NaN or a malformed event somewhere: one at a time below
        objs = []
    events = state.events
    for i, data in enumerate(datas):
        now = times[start + index[i]]
        if i < len(objs):
            obj = objs[i]
        elif data == _DONE:
            state.done = True
            events.append("[DONE]")
            continue
        else:
            try:
                obj = parse_event_data(data)
            except ValueError:
                state.error = f"malformed stream event: {data[:120]!r}"
                break
        events.append(obj)
        _take_chunk(obj, state, trace, now)
        if state.error:
            break
    return len(reads)


def _tokens(usage: dict | None, timings: dict | None) -> dict:
    tokens = empty_tokens()
    cached_from_timings = int_or_none(timings.get("cache_n")) if isinstance(timings, dict) else None
    if isinstance(usage, dict) and (usage.get("prompt_tokens") is not None or usage.get("completion_tokens") is not None):
        tokens["prompt"] = int_or_none(usage.get("prompt_tokens"))
        tokens["output"] = int_or_none(usage.get("completion_tokens"))
        details = usage.get("prompt_tokens_details")
        cached = int_or_none(details.get("cached_tokens")) if isinstance(details, dict) else None
        tokens["cached_prompt"] = cached if cached is not None else cached_from_timings
        tokens["source"] = "usage"
    elif isinstance(timings, dict) and (timings.get("prompt_n") is not None or timings.get("predicted_n") is not None):
        # llama-server's prompt_n counts only the tokens it had to process;
        # the prompt is those plus the ones reused from its cache.
        processed = int_or_none(timings.get("prompt_n"))
        tokens["prompt"] = processed + (cached_from_timings or 0) if processed is not None else None
        tokens["output"] = int_or_none(timings.get("predicted_n"))
        tokens["cached_prompt"] = cached_from_timings
        tokens["source"] = "timings"
    return tokens


class OpenAIChatAdapter(ClientOwningAdapter):
    id = "openai-chat"
    endpoint_url = staticmethod(chat_completions_url)
    request_body = staticmethod(build_body)
    new_state = _Stream

    @staticmethod
    def _read_stream(response: Any, state: _Stream, trace: StreamTrace, timeout_s: float) -> None:
        parser = SSEParser()
        taken = 0

        def take(times: list[float], reads: list[bytes]) -> None:
            nonlocal taken
            if taken < len(reads):
                taken = _take_reads(parser, state, trace, times, reads, taken)

        read_timed(response, trace, timeout_s, take, lambda: state.error is not None)
        if state.error:
            return
        for event in parser.close():
            if event.data == _DONE:
                state.done = True
        events = state.events
        if trace.end > trace.start + timeout_s:
            state.error = f"timed out after {timeout_s:g}s (stream still running, {len(events)} events received)"
        elif not (state.done or state.finish_reason):
            state.error = f"stream ended without [DONE] or finish_reason after {len(events)} events"

    @staticmethod
    def _take_whole(raw: bytes, state: _Stream) -> Any:
        try:
            obj = json.loads(raw)
        except ValueError:
            state.error = f"response is not JSON: {raw[:120]!r}"
            return {"text": raw.decode("utf-8", "replace")}
        if not isinstance(obj, dict):
            state.error = "response is not a JSON object"
            return obj
        if obj.get("error") and not obj.get("choices"):
            state.error = describe_http_error(200, obj).replace("HTTP 200", "error response", 1)
        state.usage = obj.get("usage") or None
        state.timings = obj.get("timings") or None
        state.model = text_or_none(obj.get("model"))
        choices = obj.get("choices") or []
        first = choices[0] if choices and isinstance(choices[0], dict) else {}
        state.finish_reason = text_or_none(first.get("finish_reason"))
        message = first.get("message") or {}
        state.content.append(message.get("content") or "")
        state.reasoning.append(message.get("reasoning_content") or message.get("reasoning") or "")
        return obj

    @staticmethod
    def _result(request: AdapterRequest, body: dict, response_payload: Any, state: _Stream,
                trace: StreamTrace) -> AdapterResult:
        tokens = _tokens(state.usage, state.timings)
        timing = compute_timing(trace, tokens["output"], tokens["prompt"], streamed=request.stream)
        return AdapterResult(
            ok=state.error is None,
            error=state.error,
            output_text="".join(state.content),
            reasoning_text="".join(state.reasoning),
            timing=timing,
            tokens=tokens,
            backend=dict(state.timings) if isinstance(state.timings, dict) else None,
            request_payload=body,
            response_payload=response_payload,
            served_model=state.model,
            finish_reason=state.finish_reason if isinstance(state.finish_reason, str) else None,
        )
