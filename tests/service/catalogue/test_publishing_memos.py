"""publishing's memos give what the functions they stand in for give, for inputs that differ only where
those functions can tell (registry_site/catalogue/publishing.py: WorkloadKeys, _RunShared)."""

import copy
import itertools
import json
import math

from benchpack.registry import fingerprint
from benchpack.results.plausibility import Verdict
from registry_site.catalogue import publishing


def _key_text(key: fingerprint.Key) -> str:
    return json.dumps({"digest": key.digest, "dict": key.to_dict()}, sort_keys=True, default=repr)


def _case_groups() -> list[list[dict]]:
    """Rows of one case each, varied in every input workload_key reads — values equal as Python values but
    of other JSON types (1, 1.0, true), NaN, infinity, absent and null, lanes, cache states, a bundled case
    and an unknown one."""
    base = {"pack": {"id": "smoke-chat", "version": "0.1.0"}, "case": "hello", "adapter": "openai-chat", "ok": True,
            "tokens": {"prompt": 400, "cached_prompt": 0},
            "request": {"temperature": 0, "max_tokens": 64, "stream": True, "openai_stream_usage": "include"}}
    variants = [
        ("request", "temperature", [0, 0.0, False, None, 1, 1.0, True, math.nan, math.inf, "0"]),
        ("request", "max_tokens", [64, 64.0, "64", None]),
        ("request", "stream", [True, 1, False, 0, None]),
        ("request", "openai_stream_usage", ["include", "omit", None, 1]),
        ("request", "case_sha256", ["a" * 64, None, ["a"]]),
        (None, "case", ["hello", "other", 1, "1", None]),
        (None, "adapter", ["openai-chat", "ollama", None, 1]),
        (None, "depth_tokens", [None, 4096, 4096.0, True]),
        (None, "concurrency", [None, 4, 4.0]),
        (None, "arrival_rate", [None, 2, 2.0]),
        (None, "lane", [None, {"depth_tokens": 4096}, {"concurrency": 4}, {"concurrency": 4.0}]),
        ("pack", "version", ["0.1.0", None, 1, 1.0]),
        ("tokens", "cached_prompt", [0, 390, None]),
    ]
    groups = []
    for where, name, values in variants:
        for value in values:
            row = copy.deepcopy(base)
            (row if where is None else row[where])[name] = value
            groups.append([row])
            groups.append([row, {**copy.deepcopy(row), "ok": False}])
    return groups


def test_remembered_workload_keys_are_the_keys():
    memo = publishing.WorkloadKeys()
    groups = _case_groups()
    expected = [_key_text(publishing._workload_key(rows)) for rows in groups]
    for _ in range(2):  # the second pass answers from the memo
        for rows, want in zip(groups, expected):
            assert _key_text(memo.key(rows)) == want, rows
    assert len(set(expected)) > 20  # the variants do make different keys


def test_remembered_workload_keys_start_again_when_full(monkeypatch):
    monkeypatch.setattr(publishing.WorkloadKeys, "LIMIT", 3)
    memo = publishing.WorkloadKeys()
    for rows in _case_groups():
        assert _key_text(memo.key(rows)) == _key_text(publishing._workload_key(rows))
        assert len(memo.keys) <= 3


def test_shared_verdict_and_pack_key_dicts_are_the_functions_answers():
    shared = publishing._RunShared()
    verdicts = [Verdict(status, reason, factor, figure)
                for status, reason, factor, figure in itertools.product(
                    ("plausible", "unchecked"), ("r", "s"), (None, 0, 0.0, 1, 1.0, 0.121, math.nan), (None, "decode"))]
    for verdict in verdicts * 2:
        assert json.dumps(shared.verdict_dict(verdict)) == json.dumps(verdict.to_dict())
        assert [type(v) for v in shared.verdict_dict(verdict).values()] == [type(v) for v in verdict.to_dict().values()]
    keys = [publishing._workload_key(rows) for rows in _case_groups()]
    for some in (keys[:1], keys[:5], keys[3:9], keys[:5]):
        assert shared.pack_workload_digest(some) == fingerprint.pack_workload_key(some).digest
        for key in some:
            assert shared.workload_dict(key) == key.to_dict()
