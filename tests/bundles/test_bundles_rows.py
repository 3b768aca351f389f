"""The compiled row fast path may be stricter than ROW_SCHEMA, never looser."""

import copy
import json

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from benchpack.bundles.checks import _ROW_CHECKER, _VALID_ROW, decodes_every_line
from tests.hostile import REAL_RESULTS, row

FIELDS = [
    "pack", "pack.id", "pack.version", "case", "adapter", "endpoint", "model", "ok", "error",
    "timing", "timing.wall_s", "timing.ttft_s", "timing.tpot_s", "tokens", "tokens.prompt", "tokens.output",
    "tokens.cached_prompt", "tokens.source", "backend", "resources", "resources.memory_mb", "scoring",
    "scoring.mode", "scoring.passed", "scoring.error", "raw", "raw.request_path", "repetition", "workspace",
    "patch", "patch.path", "task", "verify", "repo_task", "sandbox", "unknown_new_field",
]  # fmt: skip
VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-2, 3), st.sampled_from([0.0, 1.0, -0.5, 2.5, 1e300]),
    st.sampled_from(["", "x", "usage", "bubblewrap", "none"]), st.just({}), st.just({"a": 1}), st.just([]), st.just("DELETE"),
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


def test_it_keeps_the_sandbox_field_of_repo_task_rows_and_refuses_unknown_values():
    for mode in ("bubblewrap", "none"):
        value = row(sandbox=mode, repo_task={"status": "failed", "verify_exit_code": 1,
                                             "failure_reason": "guarded-path write: the verifier changed /x",
                                             "guarded_writes": [{"phase": "verifier", "paths": ["/x"], "count": 1}]})
        assert _VALID_ROW.decode(json.dumps(value)).sandbox == mode
        assert _ROW_CHECKER.problems(value) == []
    for bad in ("maybe", None, True):
        value = row(sandbox=bad)
        assert _ROW_CHECKER.problems(value) != []
        try:
            _VALID_ROW.decode(json.dumps(value))
        except msgspec.DecodeError:
            continue
        raise AssertionError(f"fast path accepted sandbox={bad!r}")


def test_it_takes_the_fast_path_for_every_real_row():
    lines = [line for path in REAL_RESULTS.glob("*/run.jsonl") for line in path.read_text().splitlines() if line]
    assert lines
    for line in lines:
        _VALID_ROW.decode(line)


# Lines that are fine alone, and ways a file can break the one-row-per-line
# reading: a row split over two lines, two rows on one line, other line breaks
# (\r, \x1c, U+0085, U+2028 inside a string) that str.splitlines() honours, blank lines.
_GOOD = json.dumps(row())
_LINE_FRAGMENTS = st.sampled_from([
    _GOOD, _GOOD, json.dumps(row(case="caf\u00e9\u2028x"), ensure_ascii=False), _GOOD[:40], _GOOD[40:],
    _GOOD + " " + _GOOD, _GOOD + "\r" + _GOOD, _GOOD + "\x1c" + _GOOD, json.dumps(row(case="a\x85b"), ensure_ascii=False),
    _GOOD + "  ", "", "   ", "{}", '{"ok": true}', "[]",
])  # fmt: skip


def _exact_row_count(data: bytes) -> int | None:
    """The line-by-line reading the validator's exact path does; None when a line is refused."""
    lines = [line for line in data.decode("utf-8").splitlines() if line.strip()]
    for line in lines:
        try:
            _VALID_ROW.decode(line)
        except msgspec.DecodeError:
            return None
    return len(lines) or None


@settings(max_examples=600, deadline=None)
@given(lines=st.lists(_LINE_FRAGMENTS, max_size=6), separator=st.sampled_from(["\n", "\r\n"]), final=st.booleans())
def test_it_only_reads_a_whole_file_at_once_when_every_line_is_a_valid_row(lines, separator, final):
    data = (separator.join(lines) + (separator if final else "")).encode()
    whole_file = decodes_every_line(_VALID_ROW, data, limit=100)
    if whole_file is not None:
        assert whole_file == _exact_row_count(data)


def test_it_reads_a_plain_run_jsonl_in_one_call():
    data = ("\n".join(json.dumps(row(repetition=n)) for n in range(1, 6)) + "\n").encode()
    assert decodes_every_line(_VALID_ROW, data, limit=100) == 5
    assert decodes_every_line(_VALID_ROW, data, limit=4) is None  # over the limit: the exact path says where


def test_it_reads_every_real_run_jsonl_on_the_fast_path():
    files = sorted(REAL_RESULTS.glob("*/run.jsonl"))
    assert files
    for path in files:
        data = path.read_bytes()
        assert decodes_every_line(_VALID_ROW, data, limit=10**6) == len(data.splitlines())
