import math

import pytest

from benchpack.cache_state import CACHED, COLD, UNKNOWN, group_cache_state, row_cache_state


def row(prompt, cached):
    tokens = {"prompt": prompt}
    if cached is not ...:
        tokens["cached_prompt"] = cached
    return {"tokens": tokens}


@pytest.mark.parametrize("prompt,cached,state", [
    (94, 0, COLD),
    (94, 9, COLD),            # a template prefix shared by every request
    (94, 10, CACHED),
    (94, 93, CACHED),         # llama-server serving a repeated prompt
    (94, ..., UNKNOWN),       # the server never said
    (94, None, UNKNOWN),
    (0, 0, UNKNOWN),
    (None, 0, UNKNOWN),
    (94, math.nan, UNKNOWN),
    (94, True, UNKNOWN),
    (94, -1, UNKNOWN),
])
def test_row_cache_state(prompt, cached, state):
    assert row_cache_state(row(prompt, cached)) == state


def test_row_cache_state_of_rows_without_tokens():
    assert row_cache_state({}) == UNKNOWN
    assert row_cache_state({"tokens": "x"}) == UNKNOWN


def test_group_cache_state():
    assert group_cache_state([row(94, 0), row(94, 2)]) == COLD
    assert group_cache_state([row(94, 0), row(94, 93)]) == CACHED
    assert group_cache_state([row(94, 93), row(94, ...)]) == CACHED
    assert group_cache_state([row(94, 0), row(94, ...)]) == UNKNOWN
    assert group_cache_state([]) == UNKNOWN
