"""Values a bundle may not carry: non-finite numbers and out-of-range integers
in any JSON file, over-long identifiers, runs past the per-run limits, and
credentials written with JSON escapes. Each is refused with its own code."""

from __future__ import annotations

import json

import pytest

from benchpack.bundles.checks import MAX_SAFE_INTEGER, BundleLimits, number_problem
from benchpack.bundles.create import validate_bundle
from tests.hostile import _put, row, template_bundle


@pytest.fixture
def bundle(tmp_path):
    return template_bundle(tmp_path / "t")


def _codes(bundle, limits=None) -> set[str]:
    return {f.code for f in validate_bundle(bundle, limits).findings if f.severity == "error"}


def _rows(*rows) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


@pytest.mark.parametrize(
    "text, code",
    [
        ('{"ram_mb": NaN}', "json.non-finite"),
        ('{"ram_mb": Infinity}', "json.non-finite"),
        ('{"ram_mb": -Infinity}', "json.non-finite"),
        ('{"ram_mb": 1e999}', "json.non-finite"),
        ('{"cpu_count": 1180591620717411303424}', "json.integer-range"),  # 2**70
        ('{"cpu_count": -9007199254740992}', "json.integer-range"),  # -(2**53)
        ('{"gpus": [{"memory": ' + "9" * 5000 + "}]}", "json.integer-range"),
    ],
)
def test_hardware_json_with_a_hostile_number_is_refused(bundle, text, code):
    _put(bundle, "hardware.json", text.encode())
    assert code in _codes(bundle)


def test_numbers_at_the_edges_are_fine(bundle):
    _put(bundle, "hardware.json", json.dumps({"cpu_count": MAX_SAFE_INTEGER, "ram_mb": 1.7e308, "gpus": [],
                                              "serial": "12345678901234567890"}).encode())
    assert not _codes(bundle) & {"json.non-finite", "json.integer-range"}
    assert number_problem('{"id": "99999999999999999999"}') is None  # digits inside a string are text


@pytest.mark.parametrize(
    "extra, code",
    [
        ({"repetition": 2**70}, "row.schema"),
        ({"repetition": 2**31}, "row.schema"),  # past the registry's integer column
        ({"backend": {"eval_count": 2**70}}, "json.integer-range"),  # free-form sections too
        ({"case": "c" * 129}, "row.schema"),
        ({"model": "m" * 256}, "row.schema"),
    ],
)
def test_rows_with_hostile_values_are_refused(bundle, extra, code):
    _put(bundle, "run.jsonl", _rows(row(**extra)))
    assert code in _codes(bundle)


def test_a_row_with_an_overflowing_float_is_refused(bundle):
    _put(bundle, "run.jsonl", json.dumps(row()).replace('"wall_s": 1.5', '"wall_s": 1e999').encode() + b"\n")
    assert _codes(bundle) & {"row.schema", "row.not-json", "json.non-finite"}


def test_the_per_run_limits_have_their_own_codes(bundle):
    rows = [row(case=f"case-{i}", repetition=1, patch=None) for i in range(6)]
    _put(bundle, "run.jsonl", _rows(*rows))
    assert "limit.rows-per-run" in _codes(bundle, BundleLimits(max_rows_per_run=5))
    assert "limit.cases-per-run" in _codes(bundle, BundleLimits(max_cases_per_run=5))
    assert "limit.row-bytes" in _codes(bundle, BundleLimits(max_row_bytes=100))
    within = _codes(bundle, BundleLimits(max_rows_per_run=6, max_cases_per_run=6, max_row_bytes=64 * 1024))
    assert not {c for c in within if c.startswith("limit.")}


@pytest.mark.parametrize(
    "target, content",
    [
        ("run-metadata.json", rb'{"notes": "\u0073k-proj-abcdefghijklmnopqrstuvwxyz0123456789"}'),
        ("run-metadata.json", rb'{"notes": "see https:\/\/admin:hunter2hunter2@db.example\/"}'),
        ("run-metadata.json", rb'{"runtime": {"api\u005fkey": "live-credential-value"}}'),
        ("hardware.json", rb'{"gpus": [], "notes": "Bearer\u0020abcdefghijklmnop"}'),
    ],
    ids=["unicode-sk", "slash-url", "escaped-key-name", "escaped-space-bearer"],
)
def test_secrets_behind_json_escapes_are_found(bundle, target, content):
    _put(bundle, target, content)
    findings = [f for f in validate_bundle(bundle).findings if f.code.startswith("secret.")]
    assert findings and all(f.path.endswith(target) for f in findings)
    assert all("hunter2" not in f.message and "abcdefghij" not in f.message for f in findings)


def test_an_escaped_secret_in_a_row_names_its_line(bundle):
    rows = _rows(row(), row(repetition=2, error="token \\u0073k-abcdefghijklmnopqrstuvwxyz01"))
    _put(bundle, "run.jsonl", rows.replace(b"\\\\u0073", b"\\u0073"))
    findings = [f for f in validate_bundle(bundle).findings if f.code == "secret.openai-key"]
    assert [f.line for f in findings] == [2]


@pytest.mark.parametrize("target", ["hardware.json", "run.jsonl"])
def test_a_nul_character_written_as_an_escape_is_refused(bundle, target):
    """PostgreSQL stores neither U+0000 in text nor in jsonb: approving such a row failed there."""
    if target == "run.jsonl":
        _put(bundle, target, _rows(row(), row(repetition=2, case="a\x00b")))  # json.dumps writes \u0000
    else:
        _put(bundle, target, rb'{"gpus": [], "cpu_model": "x\u0000y"}')
    findings = [f for f in validate_bundle(bundle).findings if f.code == "json.nul-character"]
    assert len(findings) == 1
    assert findings[0].line == (2 if target == "run.jsonl" else None)


def test_an_escaped_backslash_before_u0000_is_text_not_a_nul(bundle):
    _put(bundle, "hardware.json", rb'{"gpus": [], "notes": "a literal \\u0000 in prose"}')
    assert "json.nul-character" not in _codes(bundle)
