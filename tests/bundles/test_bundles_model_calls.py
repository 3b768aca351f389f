"""The bundle validator's model-call fast path must agree with the runner's allowlist."""

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from benchpack.bundles.checks import _SAFE_MODEL_CALL, _is_plain_text, decodes_every_line, is_safe_model_call_line
from benchpack.repo_task.model_calls import ALLOWED_FIELDS, is_safe_line

strings = st.one_of(
    st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=210),
    st.sampled_from(["", "local-llama", "http://h/v1", "a?b", "u@h", "m" * 200, "m" * 201, "caf\u00e9", "x\u2028y", "t\tab"]),
)
values = st.one_of(strings, st.integers(-3, 3), st.booleans(), st.none(), st.floats(allow_nan=False), st.just(1.0), st.lists(st.integers(), max_size=2))
keys = st.sampled_from(sorted(ALLOWED_FIELDS) + ["prompt", "headers"])
records = st.fixed_dictionaries(
    {"schema_version": st.sampled_from([1, 1.0, 2, True, "1"]), "sequence": st.sampled_from([1, 2, 0, -1, True, 1.5]), "model": strings, "ok": st.sampled_from([True, False, "true", 1])},
).flatmap(lambda base: st.dictionaries(keys, values, max_size=5).map(lambda extra: {**base, **extra}))


@settings(max_examples=600, deadline=None)
@given(record=records)
def test_it_judges_every_model_call_line_like_the_runner_does(record):
    line = json.dumps(record)
    assert is_safe_model_call_line(line) == is_safe_line(json.loads(line))


def test_it_accepts_the_recommended_minimal_line():
    assert is_safe_model_call_line('{"schema_version":1,"sequence":1,"model":"test-model","ok":true}')


def test_it_refuses_lines_that_are_not_json_objects():
    assert not is_safe_model_call_line("not json")
    assert not is_safe_model_call_line("[1, 2]")


def test_it_refuses_an_endpoint_that_looks_like_a_url_or_a_string_with_a_final_newline():
    base = {"schema_version": 1, "sequence": 1, "model": "m", "ok": True}
    for unsafe in ({"endpoint": "http://h"}, {"endpoint": "h?x"}, {"endpoint": "u@h"}, {"model": "m\n"}, {"error": "x" * 201}):
        line = json.dumps({**base, **unsafe})
        assert not is_safe_model_call_line(line) and not is_safe_line(json.loads(line))


def test_it_refuses_a_duration_too_large_to_be_finite():
    line = '{"schema_version": 1, "sequence": 1, "model": "m", "ok": true, "duration_s": 1e999}'
    assert not is_safe_model_call_line(line) and not is_safe_line(json.loads(line))


_SAFE = json.dumps({"schema_version": 1, "sequence": 1, "model": "m", "ok": True, "endpoint": "local-llama"})
_FILE_LINES = st.sampled_from([
    _SAFE, _SAFE, _SAFE[:30], _SAFE[30:], _SAFE + " " + _SAFE, _SAFE + "\r" + _SAFE, "", " ", "{}",
    json.dumps({"schema_version": 1, "sequence": 1, "model": "m", "ok": True, "error": "a\u2028b"}, ensure_ascii=False),
    json.dumps({"schema_version": 1, "sequence": 1, "model": "m\tx", "ok": True}).replace("\\t", "\t"),
])  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(lines=st.lists(_FILE_LINES, max_size=5), final=st.booleans())
def test_it_only_accepts_a_whole_log_at_once_when_every_line_is_safe(lines, final):
    data = ("\n".join(lines) + ("\n" if final else "")).encode()
    if _is_plain_text(data) and decodes_every_line(_SAFE_MODEL_CALL, data, limit=100) is not None:
        parsed = [line for line in data.decode().splitlines() if line.strip()]
        assert parsed and all(is_safe_line(json.loads(line)) for line in parsed)
