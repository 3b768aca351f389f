"""One agent turn: what a forwarded response says (tokens, timing), and the session's figures over its turns.

A *turn* is one HTTP request the agent sent through the measuring proxy
and the answer it got. The proxy hands every piece of the response body
(de-chunked, decompressed) to a `TurnReader` with the piece's arrival time;
the reader knows the streaming event shapes of the three APIs coding agents
speak and marks, like the adapters do, which arrivals carried a visible
token (`content_times`) or any token (`token_times`: content, reasoning,
tool-call arguments):

* OpenAI chat completions (`…/chat/completions`, also legacy
  `…/completions`): `choices[0].delta.content | reasoning_content |
  reasoning | tool_calls`; usage in `usage` (`prompt_tokens_details.
  cached_tokens`), llama-server's `timings` as a fallback;
* Anthropic Messages (`…/messages`): `content_block_delta` (`text_delta`
  visible; `thinking_delta`, `input_json_delta` other channels); usage from
  `message_start.message.usage` and `message_delta.usage`. The prompt is
  `input_tokens + cache_read_input_tokens + cache_creation_input_tokens`
  (the API counts cached tokens outside `input_tokens`), cached is
  `cache_read_input_tokens`;
* OpenAI Responses (`…/responses`): `response.output_text.delta` visible;
  `response.reasoning_text.delta`, `response.reasoning_summary_text.delta`,
  `response.function_call_arguments.delta` other channels; usage in
  `response.completed.response.usage` (`input_tokens` includes
  `input_tokens_details.cached_tokens`).

Timing is `adapters.base.compute_timing` over a `StreamTrace` whose start
is when the request's last byte left for the endpoint: the same formulas,
first-chunk placement included, as an adapter's row.
"""

from __future__ import annotations

import json
import math
from typing import Any

from benchpack.adapters.base import StreamTrace, compute_timing, empty_tokens, int_or_none, text_or_none
from benchpack.adapters.sse import SSEParser
from benchpack.measurement.stats import percentile

TURN_SCHEMA_VERSION = 1
TURNS_FILE = "agent-turns.jsonl"
MAX_PARSED_BODY = 32 * 1024 * 1024  # a non-streamed body is kept this far for its usage; the rest is only counted

CHAT, MESSAGES, RESPONSES, OTHER = "openai-chat", "anthropic-messages", "openai-responses", "other"


def api_of(path: str) -> str:
    """Which API a request path speaks, from its last segments (a query string is ignored)."""
    path = path.split("?", 1)[0].rstrip("/")
    if path.endswith("/completions"):
        return CHAT  # chat completions, and legacy text completions (same choices/usage shape)
    if path.endswith("/messages"):
        return MESSAGES
    if path.endswith("/responses"):
        return RESPONSES
    return OTHER


def request_facts(body: bytes) -> dict:
    """What the turn row says of the request: model, stream flag and how many tools (never its content)."""
    try:
        obj = json.loads(body) if body else None
    except (ValueError, UnicodeDecodeError):
        return {"model": None, "stream": None, "tools": None, "json": False}
    if not isinstance(obj, dict):
        return {"model": None, "stream": None, "tools": None, "json": True}
    tools = obj.get("tools")
    stream = obj.get("stream")
    return {"model": text_or_none(obj.get("model")), "stream": stream if isinstance(stream, bool) else None,
            "tools": len(tools) if isinstance(tools, list) else None, "json": True}


class TurnReader:
    """Reads one response body as it arrives; `result()` gives the turn's tokens, timing and stop reason."""

    def __init__(self, api: str, start: float) -> None:
        self.api = api
        self.started = start  # when the request reached the proxy's send (before the clock's own start)
        self.trace = StreamTrace(start=start)
        self.sse: SSEParser | None = None
        self.body: list[bytes] = []
        self.body_bytes = 0
        self.events = 0
        self.usage: dict = {}
        self.timings: dict | None = None
        self.finish_reason: str | None = None
        self.served_model: str | None = None
        self.error: str | None = None

    def begin(self, content_type: str) -> None:
        if "text/event-stream" in content_type.lower():
            self.sse = SSEParser()

    def feed(self, data: bytes, now: float) -> None:
        if not data:
            return
        if self.sse is None:
            if self.body_bytes < MAX_PARSED_BODY:
                self.body.append(data)
            self.body_bytes += len(data)
            return
        self.body_bytes += len(data)
        for event in self.sse.feed(data):
            self._event(event.data, now)

    def close(self) -> None:
        if self.sse is not None:
            for event in self.sse.close():
                self._event(event.data, self.trace.end or self.trace.start)
        elif self.body and self.body_bytes <= MAX_PARSED_BODY:
            try:
                obj = json.loads(b"".join(self.body))
            except (ValueError, UnicodeDecodeError):
                return
            if isinstance(obj, dict):
                self._whole(obj)

    # -- streamed events -------------------------------------------------------

    def _event(self, data: bytes, now: float) -> None:
        if data == b"[DONE]" or not data:
            return
        try:
            obj = json.loads(data)
        except (ValueError, UnicodeDecodeError):
            return
        if not isinstance(obj, dict):
            return
        self.events += 1
        if self.api == MESSAGES:
            self._messages_event(obj, now)
        elif self.api == RESPONSES:
            self._responses_event(obj, now)
        else:
            self._chat_event(obj, now)

    def _token(self, now: float, visible: bool) -> None:
        self.trace.token_times.append(now)
        if visible:
            self.trace.content_times.append(now)

    def _chat_event(self, obj: dict, now: float) -> None:
        if self.served_model is None:
            self.served_model = text_or_none(obj.get("model"))
        if isinstance(obj.get("usage"), dict):
            self.usage = obj["usage"]
        if isinstance(obj.get("timings"), dict):
            self.timings = obj["timings"]
        if obj.get("error") and not obj.get("choices"):
            self.error = f"error event in stream: {str(obj['error'])[:200]}"
        choices = obj.get("choices")
        if not choices or not isinstance(choices[0], dict):
            return
        choice = choices[0]
        delta = choice.get("delta")
        text = choice.get("text")  # legacy completions
        if isinstance(delta, dict):
            content = delta.get("content")
            other = delta.get("reasoning_content") or delta.get("reasoning") or delta.get("tool_calls")
            if content or other:
                self._token(now, bool(content))
        elif text:
            self._token(now, True)
        if choice.get("finish_reason"):
            self.finish_reason = text_or_none(choice["finish_reason"])

    def _messages_event(self, obj: dict, now: float) -> None:
        kind = obj.get("type")
        if kind == "content_block_delta":
            delta = obj.get("delta") if isinstance(obj.get("delta"), dict) else {}
            dtype = delta.get("type")
            if dtype == "text_delta" and delta.get("text"):
                self._token(now, True)
            elif (dtype == "thinking_delta" and delta.get("thinking")) or (
                    dtype == "input_json_delta" and delta.get("partial_json")):
                self._token(now, False)
        elif kind == "message_start":
            message = obj.get("message") if isinstance(obj.get("message"), dict) else {}
            self.served_model = self.served_model or text_or_none(message.get("model"))
            if isinstance(message.get("usage"), dict):
                self.usage.update(message["usage"])
        elif kind == "message_delta":
            if isinstance(obj.get("usage"), dict):
                self.usage.update({k: v for k, v in obj["usage"].items() if v is not None})
            delta = obj.get("delta") if isinstance(obj.get("delta"), dict) else {}
            self.finish_reason = text_or_none(delta.get("stop_reason")) or self.finish_reason
        elif kind == "error":
            self.error = f"error event in stream: {str(obj.get('error'))[:200]}"

    def _responses_event(self, obj: dict, now: float) -> None:
        kind = obj.get("type") or ""
        if kind == "response.output_text.delta":
            if obj.get("delta"):
                self._token(now, True)
        elif kind in ("response.reasoning_text.delta", "response.reasoning_summary_text.delta",
                      "response.function_call_arguments.delta"):
            if obj.get("delta"):
                self._token(now, False)
        elif kind in ("response.completed", "response.incomplete", "response.failed"):
            response = obj.get("response") if isinstance(obj.get("response"), dict) else {}
            self._responses_whole(response)
            if kind == "response.failed":
                self.error = f"response.failed: {str(response.get('error'))[:200]}"
        elif kind == "error":
            self.error = f"error event in stream: {str(obj.get('message') or obj)[:200]}"

    # -- whole bodies --------------------------------------------------------------

    def _whole(self, obj: dict) -> None:
        if self.api == RESPONSES:
            self._responses_whole(obj)
            return
        self.served_model = text_or_none(obj.get("model"))
        if isinstance(obj.get("usage"), dict):
            self.usage = obj["usage"]
        if self.api == MESSAGES:
            self.finish_reason = text_or_none(obj.get("stop_reason"))
            return
        if isinstance(obj.get("timings"), dict):
            self.timings = obj["timings"]
        choices = obj.get("choices")
        if choices and isinstance(choices[0], dict):
            self.finish_reason = text_or_none(choices[0].get("finish_reason"))

    def _responses_whole(self, response: dict) -> None:
        self.served_model = self.served_model or text_or_none(response.get("model"))
        if isinstance(response.get("usage"), dict):
            self.usage = response["usage"]
        status = text_or_none(response.get("status"))
        details = response.get("incomplete_details")
        reason = details.get("reason") if isinstance(details, dict) else None
        self.finish_reason = text_or_none(reason) or status or self.finish_reason

    # -- the turn's figures ---------------------------------------------------------

    def tokens(self) -> dict:
        tokens = empty_tokens()
        usage = self.usage or {}
        if self.api == MESSAGES and ("input_tokens" in usage or "output_tokens" in usage):
            parts = [int_or_none(usage.get(k)) for k in ("input_tokens", "cache_read_input_tokens",
                                                          "cache_creation_input_tokens")]
            tokens["prompt"] = None if parts[0] is None else sum(p or 0 for p in parts)
            tokens["output"] = int_or_none(usage.get("output_tokens"))
            tokens["cached_prompt"] = parts[1]
            tokens["source"] = "usage"
        elif self.api == RESPONSES and ("input_tokens" in usage or "output_tokens" in usage):
            details = usage.get("input_tokens_details")
            tokens["prompt"] = int_or_none(usage.get("input_tokens"))
            tokens["output"] = int_or_none(usage.get("output_tokens"))
            tokens["cached_prompt"] = int_or_none(details.get("cached_tokens")) if isinstance(details, dict) else None
            tokens["source"] = "usage"
        elif "prompt_tokens" in usage or "completion_tokens" in usage:
            details = usage.get("prompt_tokens_details")
            cached = int_or_none(details.get("cached_tokens")) if isinstance(details, dict) else None
            if cached is None and isinstance(self.timings, dict):
                cached = int_or_none(self.timings.get("cache_n"))
            tokens.update(prompt=int_or_none(usage.get("prompt_tokens")),
                          output=int_or_none(usage.get("completion_tokens")), cached_prompt=cached, source="usage")
        elif isinstance(self.timings, dict) and self.timings.get("predicted_n") is not None:
            cached = int_or_none(self.timings.get("cache_n"))
            processed = int_or_none(self.timings.get("prompt_n"))
            tokens.update(prompt=None if processed is None else processed + (cached or 0),
                          output=int_or_none(self.timings.get("predicted_n")), cached_prompt=cached,
                          source="timings")
        return tokens

    def timing(self, tokens: dict) -> dict:
        streamed = self.sse is not None
        return compute_timing(self.trace, tokens["output"], tokens["prompt"], streamed=streamed)


# -- the session's figures over its turns (the task row's `agent_session`) ----------------


def _round(value: float | None, digits: int = 6) -> float | None:
    return None if value is None or not math.isfinite(value) else round(value, digits)


def summarize_turns(turns: list[dict], time_to_solution_s: float | None = None) -> dict:
    """The `agent_session` object of a task row, from that execution's turn rows (docs/agents.md)."""
    ordered = sorted(turns, key=lambda t: t.get("turn") or 0)
    good = [t for t in ordered if t.get("ok")]
    tokens = [t.get("tokens") or {} for t in good]

    def total(key: str) -> int | None:
        values = [tk.get(key) for tk in tokens if isinstance(tk.get(key), int)]
        return sum(values) if values else None

    prompt, output, cached = total("prompt"), total("output"), total("cached_prompt")
    ttfts = [t["timing"]["ttft_s"] for t in good if (t.get("timing") or {}).get("ttft_s") is not None]
    tpots = [t["timing"]["tpot_s"] for t in good if (t.get("timing") or {}).get("tpot_s")]
    prompts = [tk["prompt"] for tk in tokens if isinstance(tk.get("prompt"), int)]
    growth = (prompts[-1] - prompts[0]) / (len(prompts) - 1) if len(prompts) >= 2 else None
    tpot50, tpot90 = percentile(tpots, 50), percentile(tpots, 90)
    cached_prompt = sum(tk["prompt"] for tk in tokens
                        if isinstance(tk.get("prompt"), int) and isinstance(tk.get("cached_prompt"), int))
    return {
        "time_to_solution_s": _round(time_to_solution_s),
        "turns": len(ordered),
        "error_turns": len(ordered) - len(good),
        "prompt_tokens": prompt,
        "output_tokens": output,
        "cached_prompt_tokens": cached,
        "ttft_p50_s": _round(percentile(ttfts, 50)),
        "ttft_p90_s": _round(percentile(ttfts, 90)),
        "decode_tps_p50": _round(1 / tpot50 if tpot50 else None, 4),
        "decode_tps_p90": _round(1 / tpot90 if tpot90 else None, 4),
        "prompt_growth_per_turn": _round(growth, 3),
        "cache_hit_share": _round(cached / cached_prompt, 4) if cached is not None and cached_prompt else None,
        "model_time_s": _round(math.fsum((t.get("timing") or {}).get("wall_s") or 0 for t in ordered)),
        "turns_file": TURNS_FILE,
    }
