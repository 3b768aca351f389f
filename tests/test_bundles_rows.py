"""The compiled row fast path may be stricter than ROW_SCHEMA, never looser."""

import copy
import json

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from benchpack.bundle_checks import _ROW_CHECKER, _VALID_ROW
from tests.hostile import REAL_RESULTS, row

FIELDS = [
    "pack", "pack.id", "pack.version", "case", "adapter", "endpoint", "model", "ok", "error",
    "timing", "timing.wall_s", "timing.ttft_s", "timing.tpot_s", "tokens", "tokens.prompt", "tokens.output",
    "tokens.cached_prompt", "tokens.source", "backend", "resources", "resources.memory_mb", "scoring",
    "scoring.mode", "scoring.passed", "scoring.error", "raw", "raw.request_path", "repetition", "workspace",
    "patch", "patch.path", "task", "verify", "repo_task", "unknown_new_field",
]  # fmt: skip
VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-2, 3), st.sampled_from([0.0, 1.0, -0.5, 2.5, 1e300]),
    st.sampled_from(["", "x", "usage"]), st.just({}), st.just({"a": 1}), st.just([]), st.just("DELETE"),
)  # fmt: skip


def mutate(value: dict, dotted: str, new) -> dict:
    target = value
    parts = dotted.split(".")
    for part in parts[:-1]:
        if not isinstance(target.get(part), dict):
            target[part] = {}
        target = target[part]
    if new == "DELETE":
        target.pop(parts[-1], None)
    else:
        target[parts[-1]] = new
    return value


@settings(max_examples=800, deadline=None)
@given(changes=st.lists(st.tuples(st.sampled_from(FIELDS), VALUES), max_size=4))
def test_it_only_fast_accepts_rows_the_schema_accepts(changes):
    value = row()
    for dotted, new in changes:
        value = mutate(value, dotted, copy.deepcopy(new))
    line = json.dumps(value)
    try:
        _VALID_ROW.decode(line)
    except msgspec.DecodeError:
        return  # falls back to the schema, which decides
    assert _ROW_CHECKER.problems(json.loads(line)) == []


def test_it_takes_the_fast_path_for_every_real_row():
    lines = [line for path in REAL_RESULTS.glob("*/run.jsonl") for line in path.read_text().splitlines() if line]
    assert lines
    for line in lines:
        _VALID_ROW.decode(line)
