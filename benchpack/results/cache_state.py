"""The prompt-cache state of measured requests (D-013), in one place.

A prefill rate means something only when the server really evaluated the
prompt. Servers with a prompt cache (llama-server, vLLM prefix caching,
Ollama's keep-alive context) report how many prompt tokens came from cache
(`tokens.cached_prompt`); from it each row is `cold`, `cached` or `unknown`.
Compare, report, the registry and the leaderboards read these states from
here, so a cached figure is never shown or ranked as a prefill rate.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

COLD = "cold"
CACHED = "cached"
UNKNOWN = "unknown"
STATES = (COLD, CACHED, UNKNOWN)

# A chat template's fixed opening (role markers, a system line) is shared by
# every request and may be served from cache even when the prompt itself was
# evaluated cold; up to this share of the prompt still counts as cold.
COLD_MAX_CACHED_FRACTION = 0.10


def _number(value) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def cold_by_construction(row: Mapping) -> bool:
    """The runner made this request's prompt uncacheable: a unique nonce line
    first (benchpack.packs.prompt_cache), so no earlier prompt shares its start."""
    policy = row.get("prompt_cache") if isinstance(row, Mapping) else None
    return (isinstance(policy, Mapping) and policy.get("policy") == "cold"
            and isinstance(policy.get("nonce"), str) and bool(policy.get("nonce")))


def row_cache_state(row: Mapping) -> str:
    """`cold`, `cached` or `unknown` for one result row.

    The server's own count decides when it gave one. When it did not (Ollama
    never does), a row whose prompt was cold by construction is `cold`;
    otherwise `unknown`."""
    tokens = row.get("tokens") if isinstance(row, Mapping) else None
    tokens = tokens if isinstance(tokens, Mapping) else {}
    cached, prompt = _number(tokens.get("cached_prompt")), _number(tokens.get("prompt"))
    if cached is None or prompt is None or prompt <= 0 or cached < 0:
        return COLD if cold_by_construction(row) else UNKNOWN
    return COLD if cached <= COLD_MAX_CACHED_FRACTION * prompt else CACHED


def group_cache_state(rows: Iterable[Mapping]) -> str:
    """One state for a case's measured rows: any cached row makes the group
    `cached` (its prefill median is not a rate); all cold is `cold`; else `unknown`."""
    states = {row_cache_state(row) for row in rows}
    if CACHED in states:
        return CACHED
    if states == {COLD}:
        return COLD
    return UNKNOWN


def server_prefill_tps(row: Mapping) -> float | None:
    """The server's own prompt-evaluation rate for a row, shown beside the client's.

    llama-server reports it as `timings.prompt_per_second` (kept in
    `backend`); Ollama's `prompt_eval_count / prompt_eval_duration` is kept as
    `backend.prefill_tps`. For a cached prompt it is a rate over the few
    tokens the server did evaluate, so it reads only beside the cache state.
    """
    backend = row.get("backend") if isinstance(row, Mapping) else None
    if not isinstance(backend, Mapping):
        return None
    for key in ("prompt_per_second", "prefill_tps"):
        value = _number(backend.get(key))
        if value is not None and value > 0:
            return value
    return None
