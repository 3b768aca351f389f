"""`ollama-generate`: Ollama's native `/api/generate` (D-003).

The endpoint is the server base URL (`http://127.0.0.1:11434`) or the full
`/api/generate` URL. `stream=True` reads NDJSON, `False` one JSON object.
Ollama's own counters become the token counts (`source = "native"`); its
nanosecond durations are kept in `backend` together with the prefill and
decode rates they imply. Streamed, the top-level timing fields use the same
client-side formulas as every other adapter; not streamed (no arrival times
to split prefill from decode), `timing.prefill_tps` / `decode_tps` are
Ollama's own rates, tagged `timing.rate_source = "native"`.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec

from benchpack.adapters.base import (
    AdapterRequest,
    AdapterResult,
    StreamTrace,
    compute_timing,
    empty_tokens,
    int_or_none,
    rate,
    text_or_none,
)
from benchpack.adapters.transport import ClientOwningAdapter, describe_http_error, read_timed

_decode = msgspec.json.Decoder().decode
_NS = 1_000_000_000
BACKEND_FIELDS = ("total_duration", "load_duration", "prompt_eval_count", "prompt_eval_duration",
                  "eval_count", "eval_duration", "done_reason")


def generate_url(endpoint: str) -> str:
    base = endpoint.rstrip("/")
    return base if base.endswith("/api/generate") else base + "/api/generate"


def build_body(request: AdapterRequest) -> dict:
    body: dict[str, Any] = {"model": request.model, "prompt": request.prompt, "stream": bool(request.stream)}
    options: dict[str, Any] = {}
    if request.temperature is not None:
        options["temperature"] = request.temperature
    if request.max_tokens is not None:
        options["num_predict"] = request.max_tokens
    if options:
        body["options"] = options
    if request.extra_body:
        extra = dict(request.extra_body)
        if isinstance(extra.get("options"), dict):
            body["options"] = {**options, **extra.pop("options")}
        body.update(extra)
    return body


def backend_fields(final: dict) -> dict | None:
    backend = {key: final[key] for key in BACKEND_FIELDS if key in final}
    if not backend:
        return None
    prompt_ns = int_or_none(final.get("prompt_eval_duration"))
    eval_ns = int_or_none(final.get("eval_duration"))
    backend["prefill_tps"] = rate(int_or_none(final.get("prompt_eval_count")), prompt_ns / _NS if prompt_ns else None)
    backend["decode_tps"] = rate(int_or_none(final.get("eval_count")), eval_ns / _NS if eval_ns else None)
    return backend


def fill_native_rates(timing: dict, backend: dict) -> None:
    """A non-streamed response has no arrival times, so the client cannot
    split prefill from decode; Ollama's own counters can. They fill
    `prefill_tps` / `decode_tps` (as the seed format does for this adapter),
    tagged `rate_source: "native"` so a reader knows whose clock it was."""
    prefill, decode = backend.get("prefill_tps"), backend.get("decode_tps")
    if timing.get("prefill_tps") is None and timing.get("decode_tps") is None and (prefill or decode):
        timing["prefill_tps"], timing["decode_tps"] = prefill, decode
        timing["rate_source"] = "native"


class _Generation:
    __slots__ = ("content", "thinking", "events", "final", "error")

    def __init__(self) -> None:
        self.content: list[str] = []
        self.thinking: list[str] = []
        self.events: list[Any] = []  # every parsed line, as the raw response
        self.final: dict | None = None
        self.error: str | None = None

    def take(self, obj: Any, trace: StreamTrace | None, now: float) -> None:
        self.events.append(obj)
        if not isinstance(obj, dict):
            self.error = f"unexpected NDJSON value: {str(obj)[:120]}"
            return
        if obj.get("error"):
            self.error = describe_http_error(200, obj).replace("HTTP 200", "error in stream", 1)
            return
        text = obj.get("response")
        thinking = obj.get("thinking")
        if text:
            self.content.append(text)
        if thinking:
            self.thinking.append(thinking)
        if trace is not None:
            if text:
                trace.content_times.append(now)
            if text or thinking:
                trace.token_times.append(now)
        if obj.get("done"):
            self.final = obj


def _loads(line: bytes) -> Any:
    try:
        return _decode(line)
    except msgspec.DecodeError:  # what json accepts and msgspec refuses (NaN), or a real error to word
        return json.loads(line)


class _Lines:
    """NDJSON over network reads: lines are parsed in batches, each stamped with its read's arrival time."""

    __slots__ = ("tail", "taken")

    def __init__(self) -> None:
        self.tail = b""  # a line still waiting for its newline
        self.taken = 0  # reads parsed so far

    def take(self, times: list[float], reads: list[bytes], gen: _Generation, trace: StreamTrace) -> None:
        for i in range(self.taken, len(reads)):
            if gen.error:
                break
            data = self.tail + reads[i] if self.tail else reads[i]
            end = data.rfind(b"\n")
            if end < 0:
                self.tail = data
                continue
            self.tail = data[end + 1:]
            for line in data[:end].split(b"\n"):
                if not line.strip():
                    continue
                try:
                    gen.take(_loads(line), trace, times[i])
                except ValueError:
                    gen.error = f"malformed NDJSON line: {line[:120]!r}"
                if gen.error:
                    break
        self.taken = len(reads)


class OllamaGenerateAdapter(ClientOwningAdapter):
    id = "ollama-generate"
    endpoint_url = staticmethod(generate_url)
    request_body = staticmethod(build_body)
    new_state = _Generation

    @staticmethod
    def _read_stream(response: Any, gen: _Generation, trace: StreamTrace, timeout_s: float) -> None:
        lines = _Lines()
        read_timed(response, trace, timeout_s, lambda times, reads: lines.take(times, reads, gen, trace),
                   lambda: gen.error is not None)
        tail = lines.tail
        if not gen.error and tail.strip() and gen.final is None:
            try:
                gen.take(_loads(tail), trace, trace.end)
            except ValueError:
                gen.error = f"malformed NDJSON line: {tail[:120]!r}"
        if gen.error:
            return
        if trace.end > trace.start + timeout_s:
            gen.error = f"timed out after {timeout_s:g}s (stream still running, {len(gen.events)} lines received)"
        elif gen.final is None:
            gen.error = f"stream ended without a done=true line after {len(gen.events)} lines"

    @staticmethod
    def _take_whole(raw: bytes, gen: _Generation) -> Any:
        try:
            obj = json.loads(raw)
        except ValueError:
            gen.error = f"response is not JSON: {raw[:120]!r}"
            return {"text": raw.decode("utf-8", "replace")}
        gen.take(obj, None, 0.0)
        if gen.error is None and gen.final is None:
            gen.error = "response has no done=true"
        return obj

    @staticmethod
    def _result(request: AdapterRequest, body: dict, response_payload: Any, gen: _Generation,
                trace: StreamTrace) -> AdapterResult:
        tokens = empty_tokens()
        final = gen.final or {}
        prompt = int_or_none(final.get("prompt_eval_count"))
        output = int_or_none(final.get("eval_count"))
        if prompt is not None or output is not None:
            tokens.update(prompt=prompt, output=output, source="native")
        timing = compute_timing(trace, output, prompt, streamed=request.stream)
        backend = backend_fields(final)
        if not request.stream and backend:
            fill_native_rates(timing, backend)
        return AdapterResult(
            ok=gen.error is None,
            error=gen.error,
            output_text="".join(gen.content),
            reasoning_text="".join(gen.thinking),
            timing=timing,
            tokens=tokens,
            backend=backend,
            request_payload=body,
            response_payload=response_payload,
            served_model=text_or_none(final.get("model")),
            finish_reason=text_or_none(final.get("done_reason")),
        )
