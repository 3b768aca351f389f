"""`openai-responses`: the OpenAI Responses API (`POST /v1/responses`), plain or streamed.

The endpoint is the full responses URL (`http://127.0.0.1:8080/v1/responses`);
a base URL ending in `/v1` gets `/responses` appended and a bare
`http://host:port` gets `/v1/responses`. The prompt is sent as `input` (a
string), the budget as `max_output_tokens`.

Streamed events (`event:` names, each data object carrying its `type`):
`response.created`, `response.in_progress`, `response.output_item.added`
(a `message` or a `function_call` item: the call's name), 
`response.output_text.delta`, `response.reasoning_text.delta`,
`response.function_call_arguments.delta` / `.done`,
`response.output_item.done`, then `response.completed` (or
`response.incomplete` / `response.failed`) carrying the whole response with
its `usage`. Token counts are the API's own: `usage.input_tokens` (the whole
prompt), `usage.output_tokens`, `usage.input_tokens_details.cached_tokens`.
llama-server adds its `timings` beside the final event's `response`; they
are kept as `backend`. `finish_reason` is the response's `status`
(`completed`), or for an incomplete one its `incomplete_details.reason`
(`max_output_tokens`, …).
"""

from __future__ import annotations

from typing import Any

from benchpack.adapters.base import AdapterRequest, StreamTrace, int_or_none, text_or_none
from benchpack.adapters.events import SSEJsonAdapter, StreamState, api_url, common_body, error_event, usage_tokens
from benchpack.adapters.tools import responses_tools

_FINAL = ("response.completed", "response.incomplete", "response.failed")


def responses_url(endpoint: str) -> str:
    return api_url(endpoint, "/responses")


def build_body(request: AdapterRequest) -> dict:
    body: dict[str, Any] = {"model": request.model, "input": request.prompt}
    common_body(request, body, "max_output_tokens", responses_tools)
    if request.extra_body:
        body.update(request.extra_body)
    return body


def _take_response(response: Any, state: StreamState) -> None:
    """The whole response object (non-streamed, or carried by the final event)."""
    if not isinstance(response, dict):
        return
    state.model = text_or_none(response.get("model")) or state.model
    if isinstance(response.get("usage"), dict):
        state.usage = response["usage"]
    status = text_or_none(response.get("status"))
    details = response.get("incomplete_details")
    reason = text_or_none(details.get("reason")) if isinstance(details, dict) else None
    state.finish_reason = reason if status == "incomplete" and reason else status
    if status == "failed" or (response.get("error") and status != "completed"):
        state.error = error_event({"error": response.get("error") or "response failed"}, "response failed")


def _take_event(obj: dict, state: StreamState, trace: StreamTrace, now: float) -> None:
    kind = obj.get("type")
    if kind == "response.output_text.delta":
        text = obj.get("delta")
        if text:
            state.content.append(text)
            trace.content_times.append(now)
            trace.token_times.append(now)
    elif kind == "response.function_call_arguments.delta":
        fragment = obj.get("delta")
        if fragment:
            state.tools.add(obj.get("item_id"), arguments=fragment)
            trace.add_tool_chunk(now)
            trace.token_times.append(now)
    elif kind in ("response.reasoning_text.delta", "response.reasoning_summary_text.delta"):
        text = obj.get("delta")
        if text:
            state.reasoning.append(text)
            trace.token_times.append(now)
    elif kind == "response.output_item.added":
        item = obj.get("item") if isinstance(obj.get("item"), dict) else {}
        if item.get("type") == "function_call":
            state.tools.add(item.get("id"), call_id=item.get("call_id"), name=item.get("name"),
                            arguments=item.get("arguments"))
            trace.add_tool_chunk(now)
            trace.token_times.append(now)
    elif kind == "response.function_call_arguments.done":
        state.tools.complete(obj.get("item_id"), obj.get("arguments"))
    elif kind in ("response.created", "response.in_progress"):
        response = obj.get("response") if isinstance(obj.get("response"), dict) else {}
        state.model = text_or_none(response.get("model")) or state.model
    elif kind in _FINAL:
        _take_response(obj.get("response"), state)
        if isinstance(obj.get("timings"), dict):  # llama-server's own, beside the response
            state.timings = obj["timings"]
        state.done = True
    elif kind == "error":
        state.error = error_event({"error": obj.get("error") or {"message": obj.get("message")}})


def _take_whole(obj: dict, state: StreamState) -> None:
    if obj.get("error") and not obj.get("output"):
        state.error = error_event(obj, "error response")
    _take_response(obj, state)
    if isinstance(obj.get("timings"), dict):
        state.timings = obj["timings"]
    for item in obj.get("output") or ():
        if not isinstance(item, dict):
            continue
        if item.get("type") == "message":
            for part in item.get("content") or ():
                if isinstance(part, dict) and part.get("type") == "output_text":
                    state.content.append(part.get("text") or "")
        elif item.get("type") == "reasoning":
            for part in item.get("content") or item.get("summary") or ():
                if isinstance(part, dict):
                    state.reasoning.append(part.get("text") or "")
        elif item.get("type") == "function_call":
            state.tools.add(item.get("id") or item.get("call_id"), call_id=item.get("call_id"),
                            name=item.get("name"), arguments=item.get("arguments"))


def _tokens(state: StreamState) -> dict:
    usage = state.usage or {}
    details = usage.get("input_tokens_details")
    cached = int_or_none(details.get("cached_tokens")) if isinstance(details, dict) else None
    return usage_tokens(state.usage, int_or_none(usage.get("input_tokens")), int_or_none(usage.get("output_tokens")),
                        cached, state.timings)


class OpenAIResponsesAdapter(SSEJsonAdapter):
    id = "openai-responses"
    endpoint_url = staticmethod(responses_url)
    request_body = staticmethod(build_body)
    take_event = staticmethod(_take_event)
    take_whole = staticmethod(_take_whole)
    tokens = staticmethod(_tokens)
    stream_end = "response.completed"
