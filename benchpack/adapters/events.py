"""What the three JSON-over-SSE adapters share: stream state, batched event parsing, token counts, the result.

`openai-chat`, `anthropic-messages` and `openai-responses` differ only in
their URL, their request body and what each event means; reading the
stream (kernel-stamped network reads, events stamped with the read they
arrived in), turning usage into token counts and building the result are
the same code (`SSEJsonAdapter`). An adapter names:

* `endpoint_url`, `request_body` (as `ClientOwningAdapter` wants);
* `take_event(obj, state, trace, now)`: one decoded event, stamped `now`;
* `finished(state)`: whether the stream said it is complete, and
  `stream_end` (how the error says what was missing);
* `take_whole(obj, state)`: a non-streamed response's JSON object;
* `tokens(state)`: the row's token counts from the API's own usage fields.
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
)
from benchpack.adapters.sse import SSEParser
from benchpack.adapters.tools import ToolCalls
from benchpack.adapters.transport import ClientOwningAdapter, describe_http_error, read_timed

DONE = b"[DONE]"
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


def api_url(endpoint: str, path: str) -> str:
    """`path` (e.g. `/chat/completions`) under the endpoint: a full URL ending in it is used as given, a
    base ending in `/v1` gets `path`, a bare `http://host:port` gets `/v1` + `path`; any other path as given."""
    base = endpoint.rstrip("/")
    if base.endswith(path):
        return base
    if base.endswith("/v1"):
        return base + path
    if urlsplit(base).path in ("", "/"):
        return base + "/v1" + path
    return base


def common_body(request: AdapterRequest, body: dict, max_tokens_field: str, tools) -> dict:
    """The fields every JSON adapter sets the same way: sampling, budget (in the API's own field), stream, tools."""
    if request.temperature is not None:
        body["temperature"] = request.temperature
    if request.max_tokens is not None:
        body[max_tokens_field] = request.max_tokens
    body["stream"] = bool(request.stream)
    if request.tools:
        body.update(tools(request.tools, request.tool_choice))
    return body


class StreamState:
    """What a response has said so far (streamed or whole)."""

    __slots__ = ("content", "reasoning", "events", "usage", "timings", "finish_reason", "model", "done", "error",
                 "tools")

    def __init__(self) -> None:
        self.content: list[str] = []
        self.reasoning: list[str] = []
        self.events: list[Any] = []
        self.usage: dict | None = None
        self.timings: dict | None = None  # llama-server's own `timings`, where the API carries them
        self.finish_reason: str | None = None
        self.model: str | None = None  # the "model" the server names
        self.done = False
        self.error: str | None = None
        self.tools = ToolCalls()


def error_event(obj: dict, what: str = "error event in stream") -> str:
    return describe_http_error(200, obj).replace("HTTP 200", what, 1)


def merge_usage(state: StreamState, usage: Any) -> None:
    """Usage that comes in parts (Anthropic: input at message_start, output at message_delta)."""
    if isinstance(usage, dict) and usage:
        state.usage = {**(state.usage or {}), **usage}


def take_reads(parser: SSEParser, state: StreamState, trace: StreamTrace, times: list[float], reads: list[bytes],
               start: int, take_event) -> int:
    """Parse reads[start:], each event stamped with its read's arrival time; returns how many reads are taken."""
    datas, index = parser.feed_reads(reads[start:])
    json_events = len(datas) - 1 if datas and datas[-1] == DONE else len(datas)
    try:
        objs = list(map(_decode, datas[:json_events]))  # one C-level pass for the usual batch
    except msgspec.DecodeError:  # NaN or a malformed event somewhere: one at a time below
        objs = []
    events = state.events
    for i, data in enumerate(datas):
        now = times[start + index[i]]
        if i < len(objs):
            obj = objs[i]
        elif data == DONE:
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
        if isinstance(obj, dict):
            take_event(obj, state, trace, now)
        if state.error:
            break
    return len(reads)


def usage_tokens(usage: Any, prompt: int | None, output: int | None, cached: int | None,
                 timings: Any = None) -> dict:
    """The row's token counts from an API's own usage fields (already picked out by the adapter);
    `cached` falls back to llama-server's `timings.cache_n` where the API has no cached count."""
    tokens = empty_tokens()
    if isinstance(usage, dict) and (prompt is not None or output is not None):
        if cached is None and isinstance(timings, dict):
            cached = int_or_none(timings.get("cache_n"))
        tokens.update(prompt=prompt, output=output, cached_prompt=cached, source="usage")
    return tokens


class SSEJsonAdapter(ClientOwningAdapter):
    """A JSON API answering with SSE events when streamed (see the module doc for what a subclass names)."""

    new_state = StreamState
    stream_end = "its final event"

    @staticmethod
    def take_event(obj: dict, state: StreamState, trace: StreamTrace, now: float) -> None:
        raise NotImplementedError

    @staticmethod
    def finished(state: StreamState) -> bool:
        return state.done

    @staticmethod
    def take_whole(obj: dict, state: StreamState) -> None:
        raise NotImplementedError

    @staticmethod
    def tokens(state: StreamState) -> dict:
        raise NotImplementedError

    def _read_stream(self, response: Any, state: StreamState, trace: StreamTrace, timeout_s: float) -> None:
        parser = SSEParser()
        taken = 0
        take_event = self.take_event

        def take(times: list[float], reads: list[bytes]) -> None:
            nonlocal taken
            if taken < len(reads):
                taken = take_reads(parser, state, trace, times, reads, taken, take_event)

        read_timed(response, trace, timeout_s, take, lambda: state.error is not None)
        if state.error:
            return
        for event in parser.close():  # a last event the server did not end with a blank line
            if event.data == DONE:
                state.done = True
            else:
                try:
                    obj = parse_event_data(event.data)
                except ValueError:
                    continue
                state.events.append(obj)
                if isinstance(obj, dict):
                    take_event(obj, state, trace, trace.end)
        events = state.events
        if state.error:
            return
        if trace.end > trace.start + timeout_s:
            state.error = f"timed out after {timeout_s:g}s (stream still running, {len(events)} events received)"
        elif not self.finished(state):
            state.error = f"stream ended without {self.stream_end} after {len(events)} events"

    def _take_whole(self, raw: bytes, state: StreamState) -> Any:
        try:
            obj = json.loads(raw)
        except ValueError:
            state.error = f"response is not JSON: {raw[:120]!r}"
            return {"text": raw.decode("utf-8", "replace")}
        if not isinstance(obj, dict):
            state.error = "response is not a JSON object"
            return obj
        self.take_whole(obj, state)
        return obj

    def _result(self, request: AdapterRequest, body: dict, response_payload: Any, state: StreamState,
                trace: StreamTrace) -> AdapterResult:
        tokens = self.tokens(state)
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
            tool_calls=state.tools.result() if request.tools or state.tools else None,
        )
