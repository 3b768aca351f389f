"""The D-013 cache state of a case from registry columns, while streaming rows.

`benchpack.results.cache_state.group_cache_state` reads row dicts; the importer has
column tuples (token counts as numbers, NaN/None when absent) and parses a
row's JSON only when the server gave no counts (then `prompt_cache` decides).
Same rules, same answers.
"""

from __future__ import annotations

import json
import math

from benchpack.results.cache_state import CACHED, COLD, COLD_MAX_CACHED_FRACTION, UNKNOWN, cold_by_construction


def counted_state(prompt, cached) -> str | None:
    """From the server's token counts; None when it gave none (NaN, None or nonsense)."""
    if (isinstance(prompt, (int, float)) and isinstance(cached, (int, float)) and math.isfinite(prompt)
            and math.isfinite(cached) and prompt > 0 and cached >= 0):
        return COLD if cached <= COLD_MAX_CACHED_FRACTION * prompt else CACHED
    return None


def state_of_counts(prompt, cached, prompt_cache) -> str:
    """One ok row's state from its token counts (the server's word wins), else its prompt-cache
    record (a dict, or the JSON text SQLite's json_extract returns)."""
    counted = counted_state(prompt, cached)
    if counted is not None:
        return counted
    policy = json.loads(prompt_cache) if isinstance(prompt_cache, str) else prompt_cache
    return COLD if cold_by_construction({"prompt_cache": policy}) else UNKNOWN


def combine(states: set[str]) -> str:
    """group_cache_state's rule over the ok rows' states."""
    if CACHED in states:
        return CACHED
    if states == {COLD}:
        return COLD
    return UNKNOWN


def state_of_sql_rows(rows) -> str:
    """(ok, prompt_tokens, cached_prompt_tokens, prompt_cache JSON, ...) tuples of one case."""
    return combine({state_of_counts(r[1], r[2], r[3]) for r in rows if r[0]})
