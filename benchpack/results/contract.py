"""The row contract: what one `run.jsonl` row is, defined once.

A `msgspec.Struct` family. Everything else is derived from it:

* the runner's row envelope (`benchpack.results.rows.build_row`) shapes
  `timing` and `tokens` with `TIMING_KEYS` / `TOKEN_KEYS`, the fields of
  `Timing` and `Tokens` (the runner reads them as plain tuples from
  `benchpack.results.row_keys`, without msgspec; this module refuses to
  import when its Structs' fields are not exactly those);
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
from benchpack.results import row_keys
from benchpack.results.row_keys import RATE_SOURCES  # noqa: F401  (re-exported: the rate sources, defined there)

# 2: timing.rate_source is checked; 3: repo_task.status is one of REPO_TASK_STATUSES; 4: timing.placement
ROW_CONTRACT_VERSION = 4

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

def _Text(most: int):
    return Annotated[str, msgspec.Meta(min_length=1, max_length=most)]


_Num = Optional[Annotated[float, msgspec.Meta(ge=0, le=sys.float_info.max)]]
_Count = Optional[Annotated[int, msgspec.Meta(ge=0, le=MAX_SAFE_INTEGER)]]

# gc=False: the structs hold no cycles, and tracking tens of thousands of them
# made the collector, not the decoding, the main cost of checking a bundle.


class Pack(msgspec.Struct, gc=False):
    id: _Text(MAX_PACK_ID_CHARS)
    version: _Text(MAX_PACK_VERSION_CHARS)


# Why a row's TTFT/TPOT is not a placed figure (docs/measurement.md, "What the reads could not see").
TTFT_BOUNDS = ("upper", "lower")  # the first token arrived no later / no earlier than ttft_s
TPOT_UNPLACED = ("one_read",)  # every token came in one network read: nothing says how they were spaced


class Placement(msgspec.Struct, gc=False):
    """Set only on a row whose reads could not place its tokens; null on every other row."""

    ttft: Optional[Literal[TTFT_BOUNDS]] = None
    tpot: Optional[Literal[TPOT_UNPLACED]] = None
    # How long before the first read's stamp its bytes can have started arriving: the reader's lateness
    # (its run delay, or the time since the read before), None where the read was not watched.
    reader_late_s: _Num = None


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
    placement: Optional[Placement] = None


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


# A repo task's verdict (docs/repo-tasks.md): "suspicious" is an answer that adds introspection of
# its caller or environment (frames, gc, interpreter flags, /proc, …; docs/audits.md) — never passed,
# recorded with its lines in `suspicious` and counted apart from wrong answers.
REPO_TASK_STATUSES = ("passed", "failed", "error", "suspicious")


class RepoTask(msgspec.Struct, gc=False):
    status: Optional[Literal[REPO_TASK_STATUSES]] = None
    verify_exit_code: Optional[int] = None
    failure_reason: Optional[str] = None
    failed_checks: Optional[list[str]] = None
    suspicious: Optional[list[str]] = None  # the offending lines, `path:line: what: code`


class Raw(msgspec.Struct, gc=False):
    request_path: Optional[str] = None
    response_path: Optional[str] = None


class Patch(msgspec.Struct, gc=False):
    path: Union[str, msgspec.UnsetType] = msgspec.UNSET


class AgentSession(msgspec.Struct, gc=False):
    """An external agent's session, from the measuring proxy's per-turn rows (docs/agents.md)."""

    time_to_solution_s: _Num = None
    turns: _Count = None
    error_turns: _Count = None
    prompt_tokens: _Count = None
    output_tokens: _Count = None
    cached_prompt_tokens: _Count = None
    ttft_p50_s: _Num = None
    ttft_p90_s: _Num = None
    decode_tps_p50: _Num = None
    decode_tps_p90: _Num = None
    prompt_growth_per_turn: Optional[Annotated[float, msgspec.Meta(ge=-sys.float_info.max, le=sys.float_info.max)]] = None
    cache_hit_share: Optional[Annotated[float, msgspec.Meta(ge=0, le=1)]] = None
    model_time_s: _Num = None
    turns_file: Optional[str] = None


AGENT_SESSION_KEYS: tuple[str, ...] = AgentSession.__struct_fields__


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
    repo_task: Optional[RepoTask] = None
    # How the repo task's candidate code was isolated (docs/repo-tasks.md); a "none" result
    # ranks below a "bubblewrap" one.
    sandbox: Union[Literal["bubblewrap", "none"], msgspec.UnsetType] = msgspec.UNSET
    # The measurement lanes (docs/lanes.md); absent or null: the row belongs to no lane.
    depth_tokens: Optional[Annotated[int, msgspec.Meta(ge=0, le=MAX_DEPTH_TOKENS)]] = None
    concurrency: Optional[Annotated[int, msgspec.Meta(ge=1, le=MAX_CONCURRENCY)]] = None
    arrival_rate: Optional[Annotated[float, msgspec.Meta(gt=0, le=MAX_ARRIVAL_RATE)]] = None
    load: Optional[dict] = None
    energy: Optional[dict] = None
    # An external agent's session measured by the proxy (docs/agents.md): the verdict's speed.
    agent_session: Optional[AgentSession] = None
    # Native tool calls the response made (adapters assemble streamed fragments):
    # [{"id", "name", "arguments"}]; absent or null when the case sent no tools.
    tool_calls: Optional[list[dict]] = None


def check_keys(struct: type, keys: tuple[str, ...], name: str) -> tuple[str, ...]:
    """`keys` when they are exactly `struct`'s fields, in order; otherwise ImportError naming both."""
    fields = tuple(struct.__struct_fields__)
    if fields != keys:
        raise ImportError(f"benchpack/results/row_keys.py: {name}: {keys!r} are not the row contract's "
                          f"{struct.__name__} fields {fields!r} (benchpack/results/contract.py): edit both")
    return keys


# The keys the runner writes into `timing` / `tokens` (every one present, null when unknown): row_keys'
# tuples themselves, held equal to the Structs' fields here.
TIMING_KEYS: tuple[str, ...] = check_keys(Timing, row_keys.TIMING_KEYS, "TIMING_KEYS")
TOKEN_KEYS: tuple[str, ...] = check_keys(Tokens, row_keys.TOKEN_KEYS, "TOKEN_KEYS")
# The numeric ones, which the registry stores as columns.
# placement is a record and ttft_tool_s is not a registry column (yet): the registry's tables keep their columns.
TIMING_NUMBERS: tuple[str, ...] = tuple(k for k in TIMING_KEYS if k not in ("rate_source", "placement", "ttft_tool_s"))
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
