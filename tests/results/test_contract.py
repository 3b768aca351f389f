"""The row contract is defined once: the runner's keys, the bundle schema and the registry's columns derive from it."""

from __future__ import annotations

import json

import msgspec
import pytest

from benchpack.adapters import base
from benchpack.bundles import checks
from benchpack.registry import rows as registry_rows
from benchpack.results import contract


def test_every_surface_takes_its_fields_from_the_contract():
    assert base.TIMING_KEYS is contract.TIMING_KEYS and base.TOKEN_KEYS is contract.TOKEN_KEYS
    assert checks.ROW_SCHEMA == {"$schema": "https://json-schema.org/draft/2020-12/schema",
                                 **msgspec.json.schema(contract.Row)}
    assert checks._VALID_ROW is contract.ROW_DECODER
    assert registry_rows.TIMING == contract.TIMING_NUMBERS and registry_rows.TOKENS == contract.TOKEN_COUNTS
    assert registry_rows._Timing.__struct_fields__ == contract.TIMING_NUMBERS
    # the disagreement the contract ended: rate_source is written by the runner and checked by the schema
    assert "rate_source" in contract.TIMING_KEYS
    assert "rate_source" in checks.ROW_SCHEMA["$defs"]["Timing"]["properties"]


def test_the_runner_s_plain_keys_are_the_structs_fields_or_the_contract_refuses_to_import():
    from benchpack.results import row_keys

    assert contract.TIMING_KEYS is row_keys.TIMING_KEYS and contract.TOKEN_KEYS is row_keys.TOKEN_KEYS
    assert contract.Timing.__struct_fields__ == row_keys.TIMING_KEYS
    assert contract.Tokens.__struct_fields__ == row_keys.TOKEN_KEYS
    # a key added to the Struct but not to row_keys (or the other way round) stops the import, naming both files
    with pytest.raises(ImportError, match=r"row_keys\.py: TIMING_KEYS: .*contract\.py"):
        contract.check_keys(contract.Timing, row_keys.TIMING_KEYS[:-1], "TIMING_KEYS")
    with pytest.raises(ImportError, match="Tokens fields"):
        contract.check_keys(contract.Tokens, (*row_keys.TOKEN_KEYS, "reasoning"), "TOKEN_KEYS")


ROW = {"pack": {"id": "p", "version": "1"}, "case": "c", "adapter": "openai-chat", "model": "m", "ok": True,
       "timing": {"wall_s": 1.0, "tpot_s": 0.01, "rate_source": "client"}, "tokens": {"prompt": 3, "output": 5}}


def test_the_decoder_and_the_generated_schema_agree():
    checker = checks.SchemaChecker(checks.ROW_SCHEMA)
    assert checker.problems(ROW) == [] and contract.ROW_DECODER.decode(json.dumps(ROW)).timing.tpot_s == 0.01
    bad = json.loads(json.dumps(ROW))
    bad["timing"]["rate_source"] = "guessed"
    with pytest.raises(msgspec.ValidationError):
        contract.ROW_DECODER.decode(json.dumps(bad))
    [problem] = checker.problems(bad)
    assert problem.startswith("/timing/rate_source: must be one of")
    bad = json.loads(json.dumps(ROW))
    bad["tokens"]["output"] = "five"
    assert checker.problems(bad) == ["/tokens/output: must be integer"]


def test_an_old_row_without_newer_fields_still_reads():
    old = {"pack": {"id": "p", "version": "1"}, "case": "c", "adapter": "a", "model": "m", "ok": True,
           "timing": {"wall_s": 0.68, "decode_tps": None}, "tokens": {"prompt": 41, "output": 8}, "extra": 1}
    assert checks.SchemaChecker(checks.ROW_SCHEMA).problems(old) == []
    assert registry_rows.decode_row(json.dumps(old))[8] == 0.68  # wall_s, the first timing column


def test_a_repo_task_verdict_is_one_of_the_contracts_statuses():
    """Issue 31: `suspicious` (an answer that introspects its caller) is a verdict of its own, with its lines."""
    checker = checks.SchemaChecker(checks.ROW_SCHEMA)
    row = json.loads(json.dumps(ROW))
    row["repo_task"] = {"status": "suspicious", "verify_exit_code": 1, "suspicious": ["pkg/m.py:4: garbage collector: import gc"],
                        "guarded_writes": []}  # fmt: skip
    assert checker.problems(row) == []
    assert contract.ROW_DECODER.decode(json.dumps(row)).repo_task.suspicious == ["pkg/m.py:4: garbage collector: import gc"]
    row["repo_task"]["status"] = "maybe"
    with pytest.raises(msgspec.ValidationError):
        contract.ROW_DECODER.decode(json.dumps(row))
    assert checker.problems(row)[0].startswith("/repo_task/status: must be one of")
