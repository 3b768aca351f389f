"""The scripted endpoint's Anthropic Messages and OpenAI Responses answers, and scripted tool calls.

Pure functions: they turn one planned reply (`Answer`) into what each API
sends, whole or as its SSE event sequence, event for event as the real APIs
name and order them:

* Anthropic (`POST /v1/messages`): `message_start`, then per content block
  `content_block_start` / `content_block_delta` (`thinking_delta`,
  `text_delta`, `input_json_delta`) / `content_block_stop`, then
  `message_delta` (stop_reason, usage) and `message_stop`;
* Responses (`POST /v1/responses`): `response.created`,
  `response.in_progress`, per output item `response.output_item.added`,
  (`response.content_part.added`, `response.output_text.delta`…,
  `response.output_text.done`, `response.content_part.done` | 
  `response.reasoning_text.delta`… | `response.function_call_arguments.delta`…,
  `response.function_call_arguments.done`), `response.output_item.done`,
  then `response.completed` (or `response.incomplete`) with usage, and
  llama-server's `timings` beside it as llama-server sends them.

A stream is a list of steps `(kind, bytes, timed)`: timed steps are the
tokens, sent on the reply's schedule; the others go out right after the
step before them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

Step = tuple[str, bytes, bool]


@dataclass
class ScriptedCall:
    """One tool call a reply makes: its name first (a token), then its argument text in word-sized pieces."""

    name: str
    call_id: str
    fragments: list[str]

    @property
    def arguments(self) -> str:
        return "".join(self.fragments)


def scripted_calls(entries: Any, split) -> list[ScriptedCall]:
    """A reply's `tool_calls`: [{"name", "arguments": {...} | "text", "id"?}]."""
    calls = []
    for index, entry in enumerate(entries or ()):
        arguments = entry.get("arguments", {})
        text = arguments if isinstance(arguments, str) else json.dumps(arguments)
        calls.append(ScriptedCall(str(entry["name"]), str(entry.get("id") or f"call_ref{index}"), split(text)))
    return calls


@dataclass
class Answer:
    """One reply as every API sends it (after the max-tokens budget)."""

    id: str
    model: str
    reasoning: list[str]
    content: list[str]
    calls: list[ScriptedCall]
    prompt_tokens: int
    cached: int
    output_tokens: int
    truncated: bool
    timings: dict | None = None
    created: int = 0
    extra: dict = field(default_factory=dict)


def sse_event(name: str, obj: dict) -> bytes:
    return b"event: " + name.encode() + b"\ndata: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n"


# ---- Anthropic Messages ------------------------------------------------------

def _anthropic_usage(answer: Answer, output: int) -> dict:
    # Anthropic counts input_tokens without the cached part.
    return {"input_tokens": answer.prompt_tokens - answer.cached, "cache_read_input_tokens": answer.cached,
            "output_tokens": output}


def anthropic_stop(answer: Answer) -> str:
    return "max_tokens" if answer.truncated else "tool_use" if answer.calls else "end_turn"


def anthropic_message(answer: Answer) -> dict:
    content: list[dict] = []
    if answer.reasoning:
        content.append({"type": "thinking", "thinking": "".join(answer.reasoning), "signature": ""})
    if answer.content or not answer.calls:
        content.append({"type": "text", "text": "".join(answer.content)})
    for call in answer.calls:
        content.append({"type": "tool_use", "id": call.call_id, "name": call.name,
                        "input": json.loads(call.arguments or "{}")})
    return {"id": answer.id, "type": "message", "role": "assistant", "model": answer.model, "content": content,
            "stop_reason": anthropic_stop(answer), "stop_sequence": None,
            "usage": _anthropic_usage(answer, answer.output_tokens)}


def anthropic_stream(answer: Answer) -> list[Step]:
    start = {**anthropic_message(answer), "content": [], "stop_reason": None,
             "usage": _anthropic_usage(answer, 0)}
    steps: list[Step] = [("start", sse_event("message_start", {"type": "message_start", "message": start}), False)]
    index = 0

    def block(first: dict, deltas: list[tuple[str, dict]], first_timed: bool = False) -> None:
        nonlocal index
        kind = "tool" if first.get("type") == "tool_use" else "block"
        steps.append((kind, sse_event("content_block_start", {"type": "content_block_start", "index": index,
                                                               "content_block": first}), first_timed))
        for token_kind, delta in deltas:
            steps.append((token_kind, sse_event("content_block_delta", {"type": "content_block_delta",
                                                                        "index": index, "delta": delta}), True))
        steps.append(("block", sse_event("content_block_stop", {"type": "content_block_stop", "index": index}),
                      False))
        index += 1

    if answer.reasoning:
        block({"type": "thinking", "thinking": ""},
              [("reasoning", {"type": "thinking_delta", "thinking": t}) for t in answer.reasoning])
    if answer.content:
        block({"type": "text", "text": ""}, [("content", {"type": "text_delta", "text": t}) for t in answer.content])
    for call in answer.calls:
        block({"type": "tool_use", "id": call.call_id, "name": call.name, "input": {}},
              [("tool", {"type": "input_json_delta", "partial_json": f}) for f in call.fragments], first_timed=True)
    tail = sse_event("message_delta", {"type": "message_delta",
                                       "delta": {"stop_reason": anthropic_stop(answer), "stop_sequence": None},
                                       "usage": {"output_tokens": answer.output_tokens}})
    steps.append(("final", tail + sse_event("message_stop", {"type": "message_stop"}), False))
    return steps


# ---- OpenAI Responses --------------------------------------------------------

def _responses_usage(answer: Answer) -> dict:
    return {"input_tokens": answer.prompt_tokens, "output_tokens": answer.output_tokens,
            "total_tokens": answer.prompt_tokens + answer.output_tokens,
            "input_tokens_details": {"cached_tokens": answer.cached},
            "output_tokens_details": {"reasoning_tokens": len(answer.reasoning)}}


def _items(answer: Answer) -> list[dict]:
    items: list[dict] = []
    if answer.reasoning:
        items.append({"type": "reasoning", "id": f"rs_{answer.id}", "summary": [],
                      "content": [{"type": "reasoning_text", "text": "".join(answer.reasoning)}]})
    if answer.content or not answer.calls:
        items.append({"type": "message", "id": f"msg_{answer.id}", "status": "completed", "role": "assistant",
                      "content": [{"type": "output_text", "text": "".join(answer.content), "annotations": []}]})
    for call in answer.calls:
        items.append({"type": "function_call", "id": f"fc_{call.call_id}", "call_id": call.call_id,
                      "name": call.name, "arguments": call.arguments, "status": "completed"})
    return items


def responses_object(answer: Answer, final: bool = True) -> dict:
    obj: dict[str, Any] = {"id": f"resp_{answer.id}", "object": "response", "created_at": answer.created,
                           "model": answer.model, "status": "in_progress", "output": []}
    if final:
        obj["status"] = "incomplete" if answer.truncated else "completed"
        obj["incomplete_details"] = {"reason": "max_output_tokens"} if answer.truncated else None
        obj["output"] = _items(answer)
        obj["usage"] = _responses_usage(answer)
    return obj


def responses_whole(answer: Answer) -> dict:
    obj = responses_object(answer)
    if answer.timings is not None:
        obj["timings"] = answer.timings
    return obj


def responses_stream(answer: Answer) -> list[Step]:
    def event(kind: str, name: str, timed: bool = False, **fields: Any) -> Step:
        return (kind, sse_event(name, {"type": name, **fields}), timed)

    steps = [event("start", "response.created", response=responses_object(answer, final=False)),
             event("start", "response.in_progress", response=responses_object(answer, final=False))]
    for position, item in enumerate(_items(answer)):
        item_id = item["id"]
        if item["type"] == "function_call":
            call = answer.calls[[c.call_id for c in answer.calls].index(item["call_id"])]
            steps.append(event("tool", "response.output_item.added", True, output_index=position,
                               item={**item, "arguments": "", "status": "in_progress"}))
            steps += [event("tool", "response.function_call_arguments.delta", True, item_id=item_id,
                            output_index=position, delta=f) for f in call.fragments]
            steps.append(event("item", "response.function_call_arguments.done", item_id=item_id,
                               output_index=position, arguments=call.arguments))
        elif item["type"] == "reasoning":
            steps.append(event("item", "response.output_item.added", output_index=position,
                               item={**item, "content": []}))
            steps += [event("reasoning", "response.reasoning_text.delta", True, item_id=item_id,
                            output_index=position, content_index=0, delta=t) for t in answer.reasoning]
        else:
            steps.append(event("item", "response.output_item.added", output_index=position,
                               item={**item, "status": "in_progress", "content": []}))
            steps.append(event("item", "response.content_part.added", item_id=item_id, output_index=position,
                               content_index=0, part={"type": "output_text", "text": "", "annotations": []}))
            steps += [event("content", "response.output_text.delta", True, item_id=item_id, output_index=position,
                            content_index=0, delta=t) for t in answer.content]
            text = "".join(answer.content)
            steps.append(event("item", "response.output_text.done", item_id=item_id, output_index=position,
                               content_index=0, text=text))
            steps.append(event("item", "response.content_part.done", item_id=item_id, output_index=position,
                               content_index=0, part=item["content"][0]))
        steps.append(event("item", "response.output_item.done", output_index=position, item=item))
    final_name = "response.incomplete" if answer.truncated else "response.completed"
    final = {"type": final_name, "response": responses_object(answer)}
    if answer.timings is not None:
        final["timings"] = answer.timings
    steps.append(("final", sse_event(final_name, final), False))
    return steps


# ---- OpenAI chat: tool calls -------------------------------------------------

def chat_tool_deltas(calls: list[ScriptedCall]) -> list[tuple[str, dict]]:
    """The `delta`s that stream `calls` on chat completions: the name (with id), then argument fragments."""
    deltas: list[tuple[str, dict]] = []
    for index, call in enumerate(calls):
        deltas.append(("tool", {"tool_calls": [{"index": index, "id": call.call_id, "type": "function",
                                                "function": {"name": call.name, "arguments": ""}}]}))
        deltas += [("tool", {"tool_calls": [{"index": index, "function": {"arguments": f}}]})
                   for f in call.fragments]
    return deltas


def chat_tool_calls(calls: list[ScriptedCall]) -> list[dict]:
    return [{"id": c.call_id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in calls]


def prompt_text(path: str, body: dict) -> str:
    """The words of a request's prompt, whatever API it came by (for counts, the prompt cache, `match`)."""
    def text_of(content: Any) -> str:
        if isinstance(content, str):
            return content
        if isinstance(content, list):
            return " ".join(text_of(part.get("text", "") if isinstance(part, dict) else part) for part in content)
        return "" if content is None else str(content)

    if path == "/api/generate":
        return str(body.get("prompt", ""))
    parts = []
    if path == "/v1/messages":
        parts.append(text_of(body.get("system")))
    if path == "/v1/responses":
        parts.append(text_of(body.get("instructions")))
        source = body.get("input")
        if not isinstance(source, list):
            return " ".join(p for p in parts + [text_of(source)] if p)
    else:
        source = body.get("messages") or []
    for message in source if isinstance(source, list) else ():
        if isinstance(message, dict):
            parts.append(text_of(message.get("content", "")))
    return " ".join(p for p in parts if p)
