"""What every adapter takes and returns, and the timing formulas they share.

Adapters never raise for endpoint trouble: an unreachable server, an HTTP
error status, a broken stream or a timeout becomes `ok=False` with a readable
`error` and whatever partial output arrived. All clock readings come from
`time.perf_counter()` (CLOCK_MONOTONIC on Linux), so they can be compared
with the reference server's own send times in another process.
"""

from __future__ import annotations

from typing import Any, Protocol

# msgspec.Struct, not @dataclass: a dataclass compiles its generated methods from source text in every
# process (~0.4 ms a class); a Struct is built in C (docs/measurement.md, "Issue 34 item 2: stop 43").
import msgspec


# The row's keys and rate sources are the row contract's (benchpack.results.contract), read from its plain
# copy (row_keys): the contract's Structs and msgspec are not needed to write a row; re-exported.
from benchpack.results.row_keys import RATE_SOURCES, TIMING_KEYS, TOKEN_KEYS  # noqa: E402,F401


class AdapterRequest(msgspec.Struct):
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


class AdapterResult(msgspec.Struct):
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


class StreamTrace(msgspec.Struct):
    """Absolute perf_counter readings of one request, kept for measurement checks.

    `content_times` holds the arrival time of every chunk that carried visible
    content; `token_times` every chunk that carried a token on any channel
    (content, reasoning, tool calls); `tool_times` every chunk that started or
    extended a tool call (its name, its argument fragments).
    """

    start: float = 0.0
    first_byte: float | None = None
    end: float | None = None
    content_times: list[float] = msgspec.field(default_factory=list)
    token_times: list[float] = msgspec.field(default_factory=list)
    tool_times: list[float] = msgspec.field(default_factory=list)
    # Whether visible content came before the first tool chunk in the stream (chunks of one read share a
    # time, so the times alone cannot tell the order).
    tool_follows_content: bool = False
    chunks: int = 0  # network reads of the response body
    # For the body's first reads, where the kernel stamps them: read time -> the earliest moment the
    # read's bytes can have arrived (adapters/rundelay.py).
    earliest: dict[float, float] = msgspec.field(default_factory=dict)

    def add_tool_chunk(self, now: float) -> None:
        if not self.tool_times:
            self.tool_follows_content = bool(self.content_times)
        self.tool_times.append(now)


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
    placement = None
    if streamed:
        ttft_bound = None
        if trace.tool_times:
            ttft_tool_s = first_chunk_time(trace, trace.tool_times) - trace.start
        if trace.content_times:
            first, ttft_bound = place_first_chunk(trace, trace.content_times)
            ttft_s = first - trace.start
        if trace.token_times:
            ttft_any_s = first_chunk_time(trace, trace.token_times) - trace.start
        # Each channel's first chunk is placed from its own chunks' spacing, so two placements of chunks
        # that shared a read can cross. Chunks arrive in stream order: a call that followed text came no
        # earlier than the text, and the first token of any channel no later than either.
        if ttft_tool_s is not None and ttft_s is not None and trace.tool_follows_content:
            ttft_tool_s = max(ttft_tool_s, ttft_s)
        placed = [t for t in (ttft_any_s, ttft_s, ttft_tool_s) if t is not None]
        if ttft_any_s is not None:
            ttft_any_s = min(placed)
        # The head precedes every token: when they came in one read, its stamp is that read's, and the first
        # token's placement is the better figure for both.
        if placed and ttfb_s is not None:
            ttfb_s = min(ttfb_s, *placed)
        tpot_s = time_per_output_token(trace, output_tokens)
        tpot_unplaced = "one_read" if tpot_s is None and _one_read(trace, output_tokens) else None
        if ttft_bound or tpot_unplaced:
            placement = {"ttft": ttft_bound, "tpot": tpot_unplaced, "reader_late_s": _reader_late(trace)}
    prefill_tps = rate(prompt_tokens, ttft_s)
    # With every token in one read, wall − TTFT is the time after that read, not decoding: no rate.
    unplaced = placement is not None and placement["tpot"] is not None
    decode_tps = rate(output_tokens, wall_s - ttft_s) if ttft_s is not None and not unplaced else None
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
        "placement": placement,
    }


def first_chunk_time(trace: StreamTrace, times: list[float]) -> float:
    """When the first of `times`' chunks arrived (place_first_chunk, without how it is known)."""
    return place_first_chunk(trace, times)[0]


def place_first_chunk(trace: StreamTrace, times: list[float]) -> tuple[float, str | None]:
    """When the first of `times`' chunks arrived, and whether that is a bound: None (placed), "upper"
    (it arrived no later) or "lower" (no earlier).

    Chunks that came in one network read share its time, and that time (the kernel's stamp of the read's
    newest packet: the kernel merges segments waiting in a socket and keeps the newest stamp) is the arrival
    of the last of them, not of the first. When the first read held several chunks (the reader got to the
    stream late: a busy machine, or 64 threads waiting for the GIL), the first is placed the stream's own
    spacing per chunk before that read (the spacing from there to the last chunk), so a late first read
    neither adds the reader's delay to TTFT nor takes it off TPOT. Where the read was watched
    (trace.earliest, adapters/rundelay.py), the first chunk is not placed before the earliest moment the
    read's bytes can have arrived: a server that sent those tokens in a burst is not taken for one that
    spaced them — and the figure is then that bound ("lower"). Unwatched, a placement before the response's
    head arrived (when an earlier read held it) or the request was sent (_before_read) gives way to the
    read's stamp ("upper"), as when one read held every chunk. When one read held every chunk there is no
    spacing to place the first by: the read's stamp is all that is known ("upper"). With one token per
    chunk, and a first read of one chunk, this is the read's own time.
    """
    first_read = 1
    while first_read < len(times) and times[first_read] == times[0]:
        first_read += 1
    if first_read == 1:
        return times[0], None
    if first_read == len(times):
        return times[0], "upper"
    spacing = (times[-1] - times[0]) / (len(times) - first_read)
    first = times[0] - (first_read - 1) * spacing
    before = _before_read(trace, times[0])
    earliest = trace.earliest.get(times[0])
    if earliest is None:
        # Unwatched, a placement before the head or the request is no placement at all: the server sent
        # those chunks closer than it spaced the rest. The read's stamp is what is known ("upper").
        return (times[0], "upper") if first < before else (first, None)
    floor = max(earliest, before)
    if floor > first:
        return min(floor, times[0]), "lower" if floor < times[0] else "upper"
    return first, None


def _before_read(trace: StreamTrace, read_at: float) -> float:
    """The latest moment known to precede the arrival of a read's bytes without the read being watched:
    the response's head, when an earlier read held it (bytes not in that read came after it), else the
    request's sending. The stream's spacing can place a late first read's first chunk before either — a
    negative TTFT on a loaded machine — when the server sent those chunks closer than it spaces the rest."""
    if trace.first_byte is not None and trace.first_byte < read_at:
        return trace.first_byte
    return trace.start


def _tpot_times(trace: StreamTrace) -> list[float]:
    # The output count from usage covers every channel (reasoning tokens are
    # completion tokens too), so the span must cover every channel as well;
    # for a content-only stream this is first-to-last content chunk.
    return trace.token_times if len(trace.token_times) > len(trace.content_times) else trace.content_times


def _one_read(trace: StreamTrace, output_tokens: int | None) -> bool:
    times = _tpot_times(trace)
    return output_tokens is not None and output_tokens >= 2 and len(times) >= 1 and times[-1] == times[0]


def _reader_late(trace: StreamTrace) -> float | None:
    """How long before the first token read's stamp its bytes can have started arriving (rundelay), when
    that read was watched."""
    times = trace.content_times or trace.token_times
    earliest = trace.earliest.get(times[0]) if times else None
    return max(0.0, times[0] - earliest) if earliest is not None else None


def time_per_output_token(trace: StreamTrace, output_tokens: int | None) -> float | None:
    """The mean gap between output tokens; None when there is no gap to measure — fewer than two tokens, or
    every token in one network read (a read that holds them all says nothing about their spacing: the
    server may have sent them at once, or the reader got to them late; the row's `placement` says so).
    A server batching several tokens per chunk gives the average."""
    times = _tpot_times(trace)
    if output_tokens is None or output_tokens < 2 or len(times) < 2 or times[-1] == times[0]:
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
