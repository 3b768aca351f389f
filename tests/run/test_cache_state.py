import math

import pytest

from benchpack.results.cache_state import CACHED, COLD, UNKNOWN, group_cache_state, row_cache_state


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


def cold_row(nonce="ab12cd34ef56ab78", **tokens):
    return {"tokens": tokens, "prompt_cache": {"policy": "cold", "cache_prompt_param": None, "nonce": nonce}}


def test_a_prompt_made_cold_by_its_nonce_is_cold_when_the_server_does_not_count():
    assert row_cache_state(cold_row(prompt=94)) == COLD            # Ollama: no cached count at all
    assert row_cache_state(cold_row(prompt=94, cached_prompt=93)) == CACHED  # the server's count still wins
    assert row_cache_state(cold_row(nonce=None, prompt=94)) == UNKNOWN
    assert row_cache_state({"tokens": {"prompt": 94}, "prompt_cache": {"policy": "server-default"}}) == UNKNOWN
    assert group_cache_state([cold_row(prompt=94), cold_row(prompt=94, cached_prompt=0)]) == COLD


def test_the_servers_own_prefill_rate():
    from benchpack.results.cache_state import server_prefill_tps

    assert server_prefill_tps({"backend": {"prompt_per_second": 512.5}}) == 512.5   # llama-server timings
    assert server_prefill_tps({"backend": {"prefill_tps": 200.0}}) == 200.0         # Ollama's counters
    assert server_prefill_tps({"backend": None}) is None
    assert server_prefill_tps({"backend": {"prompt_per_second": math.nan}}) is None
