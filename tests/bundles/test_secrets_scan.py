import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchpack.bundles.secrets_scan import PYTHON_SPACE_CHARACTERS, _scan_precisely, might_contain_secret, scan_bytes, scan_text
from tests.data_paths import REAL_RESULTS


# Built by concatenation so this file does not itself look like it holds secrets.
SECRETS = {
    "bearer-token": "Authorization: Bearer " + "abcDEF123456789xyz",
    "basic-auth": "Authorization: Basic " + "dXNlcjpodW50ZXIyaHVudGVy",
    "credentialed-url": "https://alice:" + "hunter2@example.com/v1",
    "tokenized-query": "http://host/v1?model=x&" + "access_token=q1w2e3r4",
    "secret-json-field": '{"api_key": "' + 'not-a-real-value-123"}',
    "private-key": "-----BEGIN " + "RSA PRIVATE KEY-----",
    "aws-access-key": "AKIA" + "ABCDEFGHIJKLMNOP",
    "github-token": "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
    "openai-key": "sk-proj-" + "Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2",
    "slack-token": "xoxb-" + "123456789012-abcdefABCDEF",
    "google-api-key": "AIza" + "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q",
    # issue 30 item 9: detect-secrets' and trufflehog's high-value detectors
    "anthropic-key": "sk-ant-api03-" + "Qw3rTy7uIo9pAs2dFg4hJk6lZx8cVb",
    "huggingface-token": "hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYz12345678",
    "gitlab-token": "glpat-" + "xY9zA8bC7dE6fG5hI4jK",
    "stripe-key": "sk_live_" + "51HqLyjWDarjtT1zdp7dc",
    "jwt": "eyJhbGciOiJIUzI1NiJ9." + "eyJzdWIiOiIxMjM0In0." + "dozjgNryP4J3jVmNHl0w5N",
    "keyword-secret": "AWS_SECRET_ACCESS_KEY=" + "wJalrXUtnFEMI/K7MDENG/bPxRfiCY3xamp1eKEY",
}


@pytest.mark.parametrize("kind", sorted(SECRETS))
def test_it_finds_each_kind_of_secret_with_its_line(kind):
    text = "first line\n  " + SECRETS[kind] + "\nlast line\n"
    hits = scan_text(text)
    assert [hit.kind for hit in hits] == [kind]
    assert hits[0].line == 2


@pytest.mark.parametrize("kind", sorted(SECRETS))
def test_it_never_puts_the_secret_in_a_hit(kind):
    hit = scan_text(SECRETS[kind])[0]
    rendered = f"{hit} {hit.description} {hit.kind}"
    secret_part = SECRETS[kind].split()[-1][-10:]
    assert secret_part not in rendered


def test_it_finds_secret_fields_inside_escaped_json():
    escaped = json.dumps({"error": json.dumps({"password": "pw-" + "12345"})})
    assert [hit.kind for hit in scan_text(escaped)] == ["secret-json-field"]


@pytest.mark.parametrize(
    "text",
    [
        '{"endpoint": "http://127.0.0.1:8081/v1/chat/completions"}',
        '{"endpoint": "http://localhost:11434/api/generate"}',
        '{"prompt_tokens": 12, "output_tokens": 3, "token_budget_field": "max_tokens"}',
        '{"tokens": {"prompt": 104, "output": 77, "cached_prompt": 0}}',
        '{"password": ""}',
        '{"api_key": "<redacted>"}',
        '{"key": "case-id"}',
        "call(key=value, token=count)",
        "git@github.com:owner/repo.git and ssh://git@host/repo",
        "the task-abcdefghijklmnopqrstuvwxyz finished",
        "-----BEGIN PUBLIC KEY-----",
    ],
)
def test_it_does_not_flag_ordinary_benchmark_text(text):
    assert scan_text(text) == []


def test_it_scans_the_real_results_clean():
    files = [path for path in REAL_RESULTS.rglob("*") if path.is_file()]
    assert files
    for path in files:
        assert scan_bytes(path.read_bytes()) == [], path


def test_it_keeps_line_numbers_right_after_characters_that_lowercase_to_two():
    text = "\u0130\u0130\u0130 ok\nx " + SECRETS["bearer-token"]
    hit = scan_text(text)[0]
    assert (hit.kind, hit.line, hit.column) == ("bearer-token", 2, 18)


def test_it_scans_bytes_that_are_not_utf8():
    data = b"\xff\xfe " + SECRETS["aws-access-key"].encode()
    assert [hit.kind for hit in scan_bytes(data)] == ["aws-access-key"]


fragments = st.sampled_from(
    [value for value in SECRETS.values()]
    + [value[: len(value) // 2] for value in SECRETS.values()]
    + ['"', '\\"', ":", " ", "\n", "?", "&", "=", "@", "://", "Token", "_key", "api", '": "', "x", "AKIA", "ghp_", "sk-", "bearer ", "\u0130", "\u212a"]
    + ["Bearer", "basic", "\u2003", "\xa0", "\x0b", "\x1c", "\x85", "\u3000", "abcdefgh12345678"]
)


@settings(max_examples=400, deadline=None)
@given(parts=st.lists(fragments, max_size=12))
def test_it_never_lets_the_fast_prefilter_hide_a_secret(parts):
    text = "".join(parts)
    if _scan_precisely(text):
        assert might_contain_secret(text) and might_contain_secret(text.encode())


def test_it_clears_ordinary_text_in_the_single_prefilter_pass():
    assert not might_contain_secret('{"endpoint": "http://127.0.0.1:8081/v1/chat/completions", "tokens": {"prompt": 3}}')


@pytest.mark.parametrize("space", ["\u2003", "\xa0", "\x0b", "\x1c", "\x85", "\u3000"])
def test_it_finds_credentials_separated_by_any_whitespace_python_knows(space):
    for text in ("Authorization: Bearer" + space + "abcDEF123456789xyz", '{"api_key":' + space + '"not-a-real-value-123"}'):
        assert scan_text(text) and scan_bytes(text.encode())


def test_it_knows_every_character_python_calls_whitespace():
    assert set(PYTHON_SPACE_CHARACTERS) == {c for c in map(chr, range(0x110000)) if re.match(r"\s", c)}
