"""The row contract: what one `run.jsonl` row is, defined once.

A `msgspec.Struct` family. Everything else is derived from it:

* the runner's row envelope (`benchpack.results.rows.build_row`) shapes
  `timing` and `tokens` with `TIMING_KEYS` / `TOKEN_KEYS`, the fields of
  `Timing` and `Tokens`;
* bundle checks decode every row with `Row` in C, and a row it refuses gets
  its messages from `ROW_SCHEMA`, the JSON Schema *generated* from `Row`
  (`msgspec.json.schema`, on first use) — the two can no longer disagree;
* the local registry's columns and fast path (`benchpack.registry.rows`)
  take their timing and token fields from `TIMING_NUMBERS` / `TOKEN_COUNTS`.

Permissive on purpose: rows written by older implementations lack newer
fields (cached_prompt, ttfb_s, tpot_s, rate_source, source, backend), and
unknown fields are allowed so newer rows stay readable. A schema change is
one edit here plus `ROW_CONTRACT_VERSION`.
"""

from __future__ import annotations

import sys
from typing import Annotated, Literal, Optional, Union

import msgspec

from benchpack.packs.lane_spec import MAX_ARRIVAL_RATE, MAX_CONCURRENCY, MAX_DEPTH_TOKENS

ROW_CONTRACT_VERSION = 2  # 2: timing.rate_source is part of the contract (it was written, never checked)

# Numbers every JSON reader agrees on (I-JSON, RFC 7493): finite, and integers
# within +/-(2**53 - 1). Databases and browsers fail past them.
MAX_SAFE_INTEGER = 2**53 - 1
# Row fields stored in fixed-width columns by the registry.
MAX_CASE_CHARS = 128
MAX_PACK_ID_CHARS = 128
MAX_PACK_VERSION_CHARS = 64
MAX_ADAPTER_CHARS = 64
MAX_MODEL_CHARS = 255
MAX_REPETITION = 2**31 - 1

# Where `prefill_tps` / `decode_tps` came from: the client's own clock, or the server's
# own counters (Ollama's prompt_eval_* / eval_* when a non-streamed response has no
# arrival times to compute them from).
RATE_SOURCES = ("client", "native")


def _Text(most: int):
    return Annotated[str, msgspec.Meta(min_length=1, max_length=most)]


_Num = Optional[Annotated[float, msgspec.Meta(ge=0, le=sys.float_info.max)]]
_Count = Optional[Annotated[int, msgspec.Meta(ge=0, le=MAX_SAFE_INTEGER)]]

# gc=False: the structs hold no cycles, and tracking tens of thousands of them
# made the collector, not the decoding, the main cost of checking a bundle.


class Pack(msgspec.Struct, gc=False):
    id: _Text(MAX_PACK_ID_CHARS)
    version: _Text(MAX_PACK_VERSION_CHARS)


class Timing(msgspec.Struct, gc=False):
    """Seconds and rates of one execution (docs/measurement.md has each formula)."""

    wall_s: _Num = None
    ttft_s: _Num = None
    prefill_tps: _Num = None
    decode_tps: _Num = None  # legacy: output ÷ (wall − TTFT); the decode figure is 1/tpot_s
    total_tps: _Num = None
    ttfb_s: _Num = None
    ttft_any_s: _Num = None
    tpot_s: _Num = None
    # Request sent -> the first chunk that started a tool call (its name) or carried its arguments;
    # null when no tool call streamed (docs/measurement.md, "Tool calls").
    ttft_tool_s: _Num = None
    rate_source: Optional[Literal[RATE_SOURCES]] = None


class Tokens(msgspec.Struct, gc=False):
    prompt: _Count = None
    output: _Count = None
    cached_prompt: _Count = None
    source: Optional[str] = None


class Resources(msgspec.Struct, gc=False):
    memory_mb: _Num = None
    gpu_memory_mb: _Num = None


class Scoring(msgspec.Struct, gc=False):
    mode: str
    passed: Optional[bool] = None
    error: Optional[str] = None


class Raw(msgspec.Struct, gc=False):
    request_path: Optional[str] = None
    response_path: Optional[str] = None


class Patch(msgspec.Struct, gc=False):
    path: Union[str, msgspec.UnsetType] = msgspec.UNSET


class Row(msgspec.Struct, kw_only=True, gc=False):
    pack: Pack
    case: _Text(MAX_CASE_CHARS)
    adapter: _Text(MAX_ADAPTER_CHARS)
    model: Annotated[str, msgspec.Meta(max_length=MAX_MODEL_CHARS)]
    ok: bool
    endpoint: Optional[str] = None
    error: Optional[str] = None
    timing: Optional[Timing] = None
    tokens: Optional[Tokens] = None
    backend: Optional[dict] = None
    resources: Optional[Resources] = None
    scoring: Optional[Scoring] = None
    raw: Optional[Raw] = None
    repetition: Union[Annotated[int, msgspec.Meta(ge=1, le=MAX_REPETITION)], msgspec.UnsetType] = msgspec.UNSET
    workspace: Optional[dict] = None
    patch: Optional[Patch] = None
    task: Optional[dict] = None
    verify: Optional[dict] = None
    repo_task: Optional[dict] = None
    # How the repo task's candidate code was isolated (docs/repo-tasks.md); a "none" result
    # ranks below a "bubblewrap" one.
    sandbox: Union[Literal["bubblewrap", "none"], msgspec.UnsetType] = msgspec.UNSET
    # The measurement lanes (docs/lanes.md); absent or null: the row belongs to no lane.
    depth_tokens: Optional[Annotated[int, msgspec.Meta(ge=0, le=MAX_DEPTH_TOKENS)]] = None
    concurrency: Optional[Annotated[int, msgspec.Meta(ge=1, le=MAX_CONCURRENCY)]] = None
    arrival_rate: Optional[Annotated[float, msgspec.Meta(gt=0, le=MAX_ARRIVAL_RATE)]] = None
    load: Optional[dict] = None
    energy: Optional[dict] = None
    # Native tool calls the response made (adapters assemble streamed fragments):
    # [{"id", "name", "arguments"}]; absent or null when the case sent no tools.
    tool_calls: Optional[list[dict]] = None


# The keys the runner writes into `timing` / `tokens` (every one present, null when unknown).
TIMING_KEYS: tuple[str, ...] = Timing.__struct_fields__
TOKEN_KEYS: tuple[str, ...] = Tokens.__struct_fields__
# The numeric ones, which the registry stores as columns.
# ttft_tool_s is not a registry column (yet): the registry's tables keep their columns.
TIMING_NUMBERS: tuple[str, ...] = tuple(k for k in TIMING_KEYS if k not in ("rate_source", "ttft_tool_s"))
TOKEN_COUNTS: tuple[str, ...] = tuple(k for k in TOKEN_KEYS if k != "source")

ROW_DECODER = msgspec.json.Decoder(Row)


def __getattr__(name: str) -> dict:
    """`ROW_SCHEMA`, generated on first use: generating it (msgspec.inspect) is a cost `benchpack run`,
    which imports this module for the row's keys, would otherwise pay without using the schema."""
    if name != "ROW_SCHEMA":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    schema = {"$schema": "https://json-schema.org/draft/2020-12/schema", **msgspec.json.schema(Row)}
    globals()["ROW_SCHEMA"] = schema
    return schema
