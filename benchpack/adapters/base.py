"""What every adapter takes and returns, and the timing formulas they share.

Adapters never raise for endpoint trouble: an unreachable server, an HTTP
error status, a broken stream or a timeout becomes `ok=False` with a readable
`error` and whatever partial output arrived. All clock readings come from
`time.perf_counter()` (CLOCK_MONOTONIC on Linux), so they can be compared
with the reference server's own send times in another process.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol


# The row's keys and rate sources are the row contract's (benchpack.results.contract); re-exported.
from benchpack.results.contract import RATE_SOURCES, TIMING_KEYS, TOKEN_KEYS  # noqa: E402,F401


@dataclass
class AdapterRequest:
    model: str
    prompt: str
    endpoint: str
    temperature: float | None = None
    max_tokens: int | None = None
    stream: bool = False
    openai_stream_usage: str = "include"  # D-014: "include" | "omit"
    timeout_s: float = 600.0
    # Extra top-level request-body fields, e.g. {"cache_prompt": False} for
    # cold llama-server numbers. They override the adapter's own fields.
    extra_body: dict | None = None
    # Native tool calls (docs/format.md, "tools"): the case's tools in the neutral form
    # [{"name", "description", "parameters"}] and its tool_choice ("auto" | "required" | "none" |
    # {"name": ...}); each adapter sends them in its own API's shape (adapters/tools.py).
    tools: list | None = None
    tool_choice: Any = None


@dataclass
class AdapterResult:
    ok: bool
    error: str | None
    output_text: str
    reasoning_text: str
    timing: dict
    tokens: dict
    backend: dict | None
    request_payload: dict
    response_payload: Any
    # What the server says it did: the model name in its response, and why it
    # stopped ("stop", "length", ...). None when the response does not say.
    served_model: str | None = None
    finish_reason: str | None = None
    # The structured tool calls the response made, assembled from streamed fragments:
    # [{"id", "name", "arguments"}] (arguments parsed JSON, or the text when it is not JSON).
    # None when the request sent no tools.
    tool_calls: list | None = None


class Adapter(Protocol):
    id: str

    def run(self, request: AdapterRequest) -> AdapterResult: ...


@dataclass
class StreamTrace:
    """Absolute perf_counter readings of one request, kept for measurement checks.

    `content_times` holds the arrival time of every chunk that carried visible
    content; `token_times` every chunk that carried a token on any channel
    (content, reasoning, tool calls); `tool_times` every chunk that started or
    extended a tool call (its name, its argument fragments).
    """

    start: float = 0.0
    first_byte: float | None = None
    end: float | None = None
    content_times: list[float] = field(default_factory=list)
    token_times: list[float] = field(default_factory=list)
    tool_times: list[float] = field(default_factory=list)
    chunks: int = 0  # network reads of the response body
    # For the body's first reads, where the kernel stamps them: read time -> the earliest moment the
    # read's bytes can have arrived (adapters/rundelay.py).
    earliest: dict[float, float] = field(default_factory=dict)


def rate(count: int | None, seconds: float | None) -> float | None:
    if count is None or seconds is None or seconds <= 0:
        return None
    return round(count / seconds, 4)


def compute_timing(trace: StreamTrace, output_tokens: int | None, prompt_tokens: int | None,
                   streamed: bool) -> dict:
    """The row's `timing` object, by the formulas in docs/internals.md.

    A non-streamed response has no per-token arrival times, so TTFT, TPOT and
    the prefill/decode split stay null rather than being guessed.
    """
    end = trace.end if trace.end is not None else trace.start
    wall_s = end - trace.start
    ttfb_s = trace.first_byte - trace.start if trace.first_byte is not None else None
    ttft_s = ttft_any_s = tpot_s = ttft_tool_s = None
    if streamed:
        if trace.tool_times:
            ttft_tool_s = first_chunk_time(trace, trace.tool_times) - trace.start
        if trace.content_times:
            ttft_s = first_chunk_time(trace, trace.content_times) - trace.start
        if trace.token_times:
            ttft_any_s = first_chunk_time(trace, trace.token_times) - trace.start
        tpot_s = time_per_output_token(trace, output_tokens)
    prefill_tps = rate(prompt_tokens, ttft_s)
    decode_tps = rate(output_tokens, wall_s - ttft_s) if ttft_s is not None else None
    return {
        "wall_s": wall_s,
        "ttft_s": ttft_s,
        "prefill_tps": prefill_tps,
        "decode_tps": decode_tps,
        "total_tps": rate(output_tokens, wall_s),
        "ttfb_s": ttfb_s,
        "ttft_any_s": ttft_any_s,
        "tpot_s": tpot_s,
        "ttft_tool_s": ttft_tool_s,
        "rate_source": "client" if prefill_tps is not None or decode_tps is not None else None,
    }


def first_chunk_time(trace: StreamTrace, times: list[float]) -> float:
    """When the first of `times`' chunks arrived.

    Chunks that came in one network read share its time, and that time (the kernel's stamp of the read's
    newest packet: the kernel merges segments waiting in a socket and keeps the newest stamp) is the arrival
    of the last of them, not of the first. When the first read held several chunks (the reader got to the
    stream late: a busy machine, or 64 threads waiting for the GIL), the first is placed the stream's own
    spacing per chunk before that read (the spacing from there to the last chunk), so a late first read
    neither adds the reader's delay to TTFT nor takes it off TPOT. Where the read was watched
    (trace.earliest, adapters/rundelay.py), the first chunk is not placed before the earliest moment the
    read's bytes can have arrived: a server that sent those tokens in a burst is not taken for one that
    spaced them. With one token per chunk, and a first read of one chunk, this is the read's own time.
    """
    first_read = 1
    while first_read < len(times) and times[first_read] == times[0]:
        first_read += 1
    if first_read == 1 or first_read == len(times):
        return times[0]
    spacing = (times[-1] - times[0]) / (len(times) - first_read)
    first = times[0] - (first_read - 1) * spacing
    earliest = trace.earliest.get(times[0])
    if earliest is not None and earliest > first:
        first = min(earliest, times[0])
    return first


def time_per_output_token(trace: StreamTrace, output_tokens: int | None) -> float | None:
    # The output count from usage covers every channel (reasoning tokens are
    # completion tokens too), so the span must cover every channel as well;
    # for a content-only stream this is first-to-last content chunk. A server
    # batching several tokens per chunk gives the average.
    times = trace.token_times if len(trace.token_times) > len(trace.content_times) else trace.content_times
    if output_tokens is None or output_tokens < 2 or len(times) < 2:
        return None
    return (times[-1] - first_chunk_time(trace, times)) / (output_tokens - 1)


def text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def empty_tokens() -> dict:
    return {"prompt": None, "output": None, "cached_prompt": None, "source": None}


def int_or_none(value: Any) -> int | None:
    # bool is an int subclass; `true` is never a token count.
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value
