"""Encoded secrets (issue 30 item 9): base32, rot13, HTML character references, spaced-out letters,
look-alike characters, `\\x` / octal escapes, nesting of these, and a key split across two rows or two
fields are each refused with one finding that names the file, the line, the field, the kind of secret
and the encoding, never the secret; real results and the text real results carry are not flagged; a
file built to make the decoding explode is refused within a bounded cost."""

from __future__ import annotations

import base64
import codecs
import json
import random
import shutil
import time
import urllib.parse

import pytest

from benchpack.bundles.create import create_bundle, validate_bundle
from benchpack.bundles.secret_layers import DECODE_BUDGET_FACTOR, HOMOGLYPHS, scan_layers
from benchpack.bundles.secrets_scan import scan_bytes, scan_text
from tests.data_paths import LANES_RESULTS, REAL_RESULTS
from tests.hostile import RUN, _put, row, template_bundle

# Built by concatenation so this file does not itself look like it holds secrets.
OPENAI = "sk-proj-" + "Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2"
AWS = "AKIA" + "QWERTYUIOPASDFGH"
GITHUB = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
ANTHROPIC = "sk-ant-api03-" + "Qw3rTy7uIo9pAs2dFg4hJk6lZx8cVb1nM5qW0eR-tY_uIoP"
HF = "hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYz12345678"
SECRETS = (OPENAI, AWS, GITHUB, ANTHROPIC, HF)


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _b32(text: str) -> str:
    return base64.b32encode(text.encode()).decode()


def _fullwidth(text: str) -> str:
    return "".join(chr(ord(c) + 0xFEE0) for c in text)


def _tags(text: str) -> str:
    return "".join(chr(0xE0000 + ord(c)) for c in text)


def _cyrillic(text: str) -> str:
    return text.replace("o", "\u043e").replace("p", "\u0440").replace("a", "\u0430").replace("x", "\u0445")


def _math_bold(text: str) -> str:
    """MATHEMATICAL BOLD letters and digits (U+1D400...)."""
    out = []
    for c in text:
        if "A" <= c <= "Z":
            out.append(chr(0x1D400 + ord(c) - ord("A")))
        elif "a" <= c <= "z":
            out.append(chr(0x1D41A + ord(c) - ord("a")))
        elif "0" <= c <= "9":
            out.append(chr(0x1D7CE + ord(c) - ord("0")))
        else:
            out.append(c)
    return "".join(out)


# name -> (the row's extra fields, the secret kind, the layer the message names, the field it names)
ENCODED = {
    "base32": ({"notes": _b32(OPENAI)}, "openai-key", "base32", "/notes"),
    "base32, lower case, unpadded": ({"notes": _b32(AWS).lower().rstrip("=")}, "aws-access-key", "base32", "/notes"),
    "rot13": ({"notes": "key " + codecs.encode(OPENAI, "rot13")}, "openai-key", "rot13", "/notes"),
    "rot13 of an AWS id": ({"notes": codecs.encode(AWS, "rot13")}, "aws-access-key", "rot13", "/notes"),
    "HTML decimal references": ({"notes": "".join(f"&#{ord(c)};" for c in OPENAI)}, "openai-key", "HTML character references", "/notes"),
    "HTML hex references": ({"error": "".join(f"&#x{ord(c):X};" for c in GITHUB)}, "github-token", "HTML character references", "/error"),
    "HTML, only the first letter": ({"notes": "&#115;" + OPENAI[1:]}, "openai-key", "HTML character references", "/notes"),
    "HTML named references": ({"notes": "sk&hyphen;proj&#45;" + OPENAI[8:]}, "openai-key", "HTML character references", "/notes"),
    "spaced with spaces": ({"notes": " ".join(OPENAI)}, "openai-key", "spaced-out characters", "/notes"),
    "spaced with dots": ({"notes": ".".join(OPENAI)}, "openai-key", "spaced-out characters", "/notes"),
    "spaced with dashes": ({"notes": "-".join(AWS)}, "aws-access-key", "spaced-out characters", "/notes"),
    "spaced with ' | '": ({"notes": " | ".join(GITHUB)}, "github-token", "spaced-out characters", "/notes"),
    "Cyrillic look-alikes": ({"notes": _cyrillic(OPENAI)}, "openai-key", "look-alike characters", "/notes"),
    "Greek look-alikes in an AWS id": ({"notes": AWS.replace("A", "\u0391").replace("K", "\u039a")}, "aws-access-key",
                                       "look-alike characters", "/notes"),
    "fullwidth": ({"notes": _fullwidth(OPENAI)}, "openai-key", "look-alike characters", "/notes"),
    "mathematical bold": ({"notes": _math_bold(GITHUB)}, "github-token", "look-alike characters", "/notes"),
    "Unicode tag characters": ({"notes": "nothing to see " + _tags(OPENAI)}, "openai-key", "look-alike characters", "/notes"),
    "\\x escapes": ({"notes": "".join(f"\\x{ord(c):02x}" for c in OPENAI)}, "openai-key", "backslash escapes", "/notes"),
    "octal escapes": ({"notes": "".join(f"\\{ord(c):03o}" for c in AWS)}, "aws-access-key", "backslash escapes", "/notes"),
    "\\u escapes inside the string": ({"notes": "".join(f"\\u{ord(c):04x}" for c in OPENAI)}, "openai-key", "backslash escapes", "/notes"),
    "anthropic key in base32": ({"notes": _b32(ANTHROPIC)}, "anthropic-key", "base32", "/notes"),
    "hugging face token rot13": ({"notes": codecs.encode(HF, "rot13")}, "huggingface-token", "rot13", "/notes"),
    "nested: HTML of base64": ({"notes": "".join(f"&#{ord(c)};" for c in _b64(OPENAI))}, "openai-key",
                               "HTML character references of base64", "/notes"),
    "nested: base32 of base64 of reversed": ({"notes": base64.b32encode(_b64(OPENAI[::-1]).encode()).decode()}, "openai-key",
                                             "base32 of base64 of reversed text", "/notes"),
    "nested: base64 of rot13": ({"notes": _b64(codecs.encode(GITHUB, "rot13"))}, "github-token", "base64 of rot13", "/notes"),
    "nested: spaced look-alikes": ({"notes": " ".join(_fullwidth(AWS))}, "aws-access-key", "look-alike characters", "/notes"),
    "nested: rot13 of base64": ({"notes": codecs.encode(_b64(OPENAI), "rot13")}, "openai-key", "rot13 of base64", "/notes"),
    "nested: spaced base32": ({"notes": " ".join(_b32(AWS))}, "aws-access-key", "spaced-out characters of base32", "/notes"),
    "nested: %-encoded look-alikes": ({"notes": urllib.parse.quote(_cyrillic(OPENAI))}, "openai-key",
                                      "%-encoding of look-alike characters", "/notes"),
    "nested field": ({"detail": {"items": ["ok", _b32(OPENAI)]}}, "openai-key", "base32", "/detail/items/1"),
}


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    return template_bundle(tmp_path_factory.mktemp("template"))


def _bundle_with_rows(tmp_path, template, rows: list[dict], ascii_only: bool = False):
    bundle = tmp_path / "bundle"
    shutil.copytree(template, bundle)
    _put(bundle, "run.jsonl", "".join(json.dumps(r, ensure_ascii=ascii_only) + "\n" for r in rows).encode())
    return bundle


def _secret_findings(bundle):
    report = validate_bundle(bundle)
    rendered = json.dumps(report.to_dict(), ensure_ascii=False)
    for secret in SECRETS:
        assert secret[-12:] not in rendered and secret[4:16] not in rendered
    return [f for f in report.findings if f.code.startswith("secret.")]


@pytest.mark.parametrize("ascii_only", [False, True], ids=["utf8-rows", "ascii-rows"])  # ѕ as `\u0455` too
@pytest.mark.parametrize("name", sorted(ENCODED))
def test_each_encoding_of_a_planted_key_is_one_clear_finding(tmp_path, template, name, ascii_only):
    extra, kind, layer, field = ENCODED[name]
    bundle = _bundle_with_rows(tmp_path, template, [row(), row(repetition=2, **extra), row(repetition=3)], ascii_only)
    findings = _secret_findings(bundle)
    assert [(f.code, f.path, f.line) for f in findings] == [(f"secret.{kind}", f"{RUN}/run.jsonl", 2)], findings
    message = findings[0].message
    assert f"hidden as {layer}" in message and f"in field {field}" in message and "value not shown" in message, message


SPLITS = {
    "the prompt of one row ends with half, the next row's prompt starts with the rest": (
        [row(prompt="please use " + OPENAI[:11]), row(repetition=2, prompt=OPENAI[11:] + " to call the API")],
        "openai-key", 1, "fields /prompt and /prompt of the next row"),
    "two adjacent fields of one row": (
        [row(), row(repetition=2, key_part_1=AWS[:9], key_part_2=AWS[9:])], "aws-access-key", 2, "fields /key_part_1 and /key_part_2"),
    "split inside the vendor prefix, across rows": (
        [row(notes="token s"), row(repetition=2, notes="k" + OPENAI[2:])], "openai-key", 1,
        "fields /notes and /notes of the next row"),
    "three pieces in an array": (
        [row(parts=[GITHUB[:6], GITHUB[6:20], GITHUB[20:]])], "github-token", 1, "fields /parts/0 and /parts/1"),
    "last field of a row, first string of the next": (
        [row(tail="auth " + GITHUB[:12]), {"lead": GITHUB[12:], **row(repetition=2)}], "github-token", 1,
        "of the next row"),
}


@pytest.mark.parametrize("name", sorted(SPLITS))
def test_a_key_split_across_rows_or_fields_is_found(tmp_path, template, name):
    rows, kind, line, fields = SPLITS[name]
    findings = _secret_findings(_bundle_with_rows(tmp_path, template, rows))
    assert [(f.code, f.line) for f in findings] == [(f"secret.{kind}", line)], findings
    assert "split across" in findings[0].message and fields in findings[0].message, findings[0].message


def test_a_split_key_in_a_json_document_names_its_fields(tmp_path, template):
    document = {"hostname": "box", "gpus": [], "note_a": "key=" + OPENAI[:12], "note_b": OPENAI[12:]}
    bundle = tmp_path / "bundle"
    shutil.copytree(template, bundle)
    _put(bundle, "hardware.json", json.dumps(document, indent=2).encode())
    findings = _secret_findings(bundle)
    assert [(f.code, f.path) for f in findings] == [("secret.openai-key", f"{RUN}/hardware.json")]
    assert "fields /note_a and /note_b" in findings[0].message and findings[0].line == 4


def test_a_key_named_with_the_secret_is_not_echoed_in_the_field(tmp_path, template):
    bundle = _bundle_with_rows(tmp_path, template, [row(**{_b32(OPENAI): "x", "notes": _b32(OPENAI)})])
    findings = _secret_findings(bundle)
    assert findings and all(_b32(OPENAI)[:16] not in f.message for f in findings)


# --- what must not be flagged -----------------------------------------------------------------------


def test_real_result_directories_are_not_flagged(tmp_path):
    sources = [path for path in (*REAL_RESULTS.iterdir(), *LANES_RESULTS.iterdir()) if path.is_dir()]
    assert len(sources) >= 7
    for source in sources:
        for path in source.rglob("*"):
            if path.is_file():
                documents = "lines" if path.suffix == ".jsonl" else "document" if path.suffix == ".json" else None
                assert scan_bytes(path.read_bytes()) == [], path
                assert scan_layers(path.read_bytes(), json_documents=documents) == [], path
        bundle = create_bundle([source], tmp_path / source.name, "self-reported")
        report = validate_bundle(bundle)
        assert not [f for f in report.findings if f.code.startswith("secret.")], (source.name, report.findings)


ORDINARY = {
    "sha256 digests and UUIDs": {"sha256": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
                                 "run_id": "3b241101-e2bb-4255-8caf-8ffbd3a7f2ce", "nonce": "b4dd81e8356d85a1"},
    "base64 of ordinary text": {"answer_b64": _b64("The function returns the sum of the items; the test checks an empty list.")},
    "base32 of ordinary text": {"blob": _b32("The function returns the sum of the items.")},
    "Russian and Greek answers": {"answer": "Ответ: функция возвращает сумму элементов. Η συνάρτηση επιστρέφει το άθροισμα."},
    "dashes and HTML entities": {"answer": "Fixed — the loop stops at `len(items) - 1` – see &lt;utils.py&gt; &amp; tests; 5&nbsp;ms"},
    "code with escapes": {"answer": 'print("\\x1b[31mred\\x1b[0m", "\\101\\102\\103", "\\u00e9")'},
    "single letters and numbers in lists": {"answer": "a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p; 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6"},
    "a spelled-out word": {"answer": "S-T-R-A-W-B-E-R-R-Y has three r's: s t r a w b e r r y"},
    "rot13 of prose": {"answer": codecs.encode("The quick brown fox jumps over the lazy dog", "rot13")},
    "token counts and labels": {"token_budget_field": "max_tokens", "prompt_tokens": 12, "tokenizer_sha256": "ab" * 32},
    "source code assignments": {"answer": "key = value\ntoken = count_tokens(text)\npassword = getpass()\nsecret_key = os.environ['SECRET_KEY']"},
    "a markdown table rule": {"answer": "| a | b |\n|---|---|\n| 1 | 2 |\n" + "-" * 80},
    "an endpoint then a contact": {"endpoint": "http://127.0.0.1:8081", "contact": "bob@example.org"},
    "a long word ending a field": {"notes": "results s", "next": "kinetics"},
    "long model names": {"model": "Qwen2.5-Coder-32B-Instruct-GGUF-Q4_K_M", "model_sha": "A" * 24},
}


@pytest.mark.parametrize("name", sorted(ORDINARY))
def test_text_real_results_carry_is_not_flagged(tmp_path, template, name):
    bundle = _bundle_with_rows(tmp_path, template, [row(**ORDINARY[name]), row(repetition=2, **ORDINARY[name])])
    assert _secret_findings(bundle) == []


def test_two_thousand_realistic_rows_scan_clean():
    from bench.secret_scan_cost import _case_row

    rng = random.Random(9)
    data = "".join(_case_row(rng, i) for i in range(2000)).encode()
    assert scan_bytes(data) == []
    assert scan_layers(data, json_documents="lines") == []


# --- detectors ------------------------------------------------------------------------------------

DETECTED = {
    "anthropic-key": ANTHROPIC,
    "huggingface-token": HF,
    "gitlab-token": "glpat-" + "xY9zA8bC7dE6fG5hI4jK",
    "stripe-key": "sk_live_" + "51HqLyjWDarjtT1zdp7dc",
    "jwt": "eyJhbGciOiJIUzI1NiJ9." + "eyJzdWIiOiIxMjM0NTY3ODkwIn0." + "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "sendgrid-key": "SG." + "ngeVfQFYQlKU0ufo8x5d1A" + "." + "TwL2iGABf9DHoTf-09kqeF8tAmbihYzrnopKc-1s5cr",
    "npm-token": "npm_" + "a" * 10 + "B1c2D3e4F5g6H7i8J9k0L1m2N3",
    "pypi-token": "pypi-AgEIcHlwaS5vcmc" + "CJDk5ZjM2N2M3LTQ1YzgtNDZiNS1iMTg5LTQ1NzUzNTA3NGU4MwACKlsz",
    "slack-webhook": "https://hooks.slack.com/services/" + "T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
    "google-oauth": "GOCSPX-" + "1a2B3c4D5e6F7g8H9i0J1k2L3m4N",
    "azure-storage-key": "AccountKey=" + "Zm9vYmFy" * 11,
    "twilio-key": "SK" + "0123456789abcdef0123456789abcdef",
    "databricks-token": "dapi" + "0123456789abcdef0123456789abcdef",
    "digitalocean-token": "dop_v1_" + "0123456789abcdef" * 4,
    "vault-token": "hvs." + "CAESIJ2k3l4m5n6o7p8q9r0sT1u2",
    "private-key": "-----BEGIN OPENSSH " + "PRIVATE KEY-----",
    "keyword-secret": "export OPENAI_API_KEY=" + "Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2",
    "ai-provider-key": "gsk_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8S9t0U1v2W3x4Y5z6",
    "telegram-bot-token": "123456789:" + "AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw8",
}


@pytest.mark.parametrize("kind", sorted(DETECTED))
def test_each_added_detector_finds_its_kind_alone(kind):
    assert [hit.kind for hit in scan_text("x = 1\n  " + DETECTED[kind] + "\n")] == [kind]
    assert [hit.kind for hit in scan_bytes(("note: " + DETECTED[kind]).encode())] == [kind]


# --- bounded cost ----------------------------------------------------------------------------------


def test_a_file_built_to_explode_the_decoding_is_refused_within_a_bounded_cost():
    """Every whole-line gate fires on every line and each view differs, so a nested scan would decode
    hundreds of views of each line: the budget stops it and the file is refused, not published unscanned."""
    piece = "&amp; \\x41 a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p fx-abcdefgh \u0430\u200b -ks " + "Zm9v" * 5 + " "
    line = json.dumps({"notes": piece * 4000}, ensure_ascii=False)
    data = ("\n".join([line] * 20) + "\n").encode()
    started = time.process_time()
    hits = scan_layers(data, json_documents="lines")
    spent = time.process_time() - started
    assert [(hit.hit.kind, hit.layer) for hit in hits] == [("decode-budget", "nested layers")]
    assert f"over {DECODE_BUDGET_FACTOR}x its size" in hits[0].description
    assert spent < 60, spent


def test_the_decode_budget_is_a_finding_of_its_own(tmp_path, template):
    piece = "&amp; \\x41 a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p fx-abcdefgh \u0430\u200b -ks "
    bundle = _bundle_with_rows(tmp_path, template, [row(notes=piece * 3000) for _ in range(12)])
    findings = _secret_findings(bundle)
    assert [f.code for f in findings] == ["secret.decode-budget"]
    assert "cannot be shown to be free of secrets" in findings[0].message


def test_homoglyphs_map_one_character_to_one_ascii_character():
    assert all(len(target) == 1 and target.isascii() and chr(code) != target for code, target in HOMOGLYPHS.items())
    assert HOMOGLYPHS[ord("\u0430")] == "a" and HOMOGLYPHS[ord("\u03bf")] == "o" and HOMOGLYPHS[0xFF53] == "s"


def test_thousands_of_single_letters_are_joined_cheaply_and_not_refused():
    """Answers of a multiple-choice pack: every "A" is the start of `AKIA`, so each is joined with what
    follows; a list of 10,000 of them stays well inside the decode budget."""
    rows = [json.dumps({"case": f"q{i}", "answer": "ABCD"[i % 4], "choices": list("ABCD") * 500}) for i in range(20)]
    assert scan_layers("\n".join(rows).encode(), json_documents="lines") == []
