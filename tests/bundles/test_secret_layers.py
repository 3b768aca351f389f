"""Secrets in other clothes (issue 22 §6): base64, hex, %-encoded, reversed, zero-width-split and
split-across-fields forms of a credential are found, with the line they sit on; ordinary result files,
digests and random ids are not; nothing a hit says shows the secret."""

from __future__ import annotations

import base64
import json
import random
import urllib.parse

import pytest

from benchpack.bundles.create import validate_bundle
from benchpack.bundles.secret_layers import layers_that_apply, scan_layers
from tests.data_paths import REAL_RESULTS

# Built by concatenation so this file does not itself look like it holds secrets.
OPENAI = "sk-proj-" + "Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2"
GITHUB = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
AWS = "AKIA" + "QWERTYUIOPASDFGH"
URL = "https://alice:" + "hunter2@example.com/v1"
BEARER = "Authorization: Bearer " + "abcDEF123456789xyz"


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _zero_width_split(secret: str, char: str = "\u200b") -> str:
    return char.join(secret)


VARIANTS = {
    "base64 of a key": ({"notes": _b64(OPENAI)}, "openai-key", "base64"),
    "base64 of a header line": ({"notes": "h=" + _b64(BEARER)}, "bearer-token", "base64"),
    "base64url without padding": ({"x": base64.urlsafe_b64encode(("tok=" + GITHUB + "??>>").encode()).decode().rstrip("=")},
                                  "github-token", "base64"),
    "hex of a key": ({"blob": GITHUB.encode().hex()}, "github-token", "hex"),
    "upper-case hex": ({"blob": AWS.encode().hex().upper()}, "aws-access-key", "hex"),
    "%-encoded every byte": ({"q": "".join(f"%{b:02X}" for b in OPENAI.encode())}, "openai-key", "url"),
    "%-encoded URL": ({"u": urllib.parse.quote(URL, safe="")}, "credentialed-url", "url"),
    "reversed key": ({"notes": OPENAI[::-1]}, "openai-key", "reversed"),
    "reversed AWS id": ({"notes": "id " + AWS[::-1] + " end"}, "aws-access-key", "reversed"),
    "reversed credentialed URL": ({"notes": URL[::-1]}, "credentialed-url", "reversed"),
    "zero-width spaces": ({"notes": _zero_width_split(OPENAI)}, "openai-key", "zero-width"),
    "zero-width joiner in AWS id": ({"notes": AWS[:4] + "\u200d" + AWS[4:]}, "aws-access-key", "zero-width"),
    "BOM and word joiner": ({"notes": GITHUB[:10] + "\ufeff" + GITHUB[10:20] + "\u2060" + GITHUB[20:]},
                            "github-token", "zero-width"),
    "split across two fields": ({"a": OPENAI[:8], "b": OPENAI[8:]}, "openai-key", "joined fields"),
    "split across array items": ({"parts": [GITHUB[:6], GITHUB[6:20], GITHUB[20:]]}, "github-token", "joined fields"),
    "URL split at the password": ({"host": "https://alice:hun", "rest": "ter2@example.com/v1"}, "credentialed-url",
                                  "joined fields"),
    "base64 of a reversed key": ({"notes": _b64(OPENAI[::-1])}, "openai-key", "base64+reversed"),
    "%-encoded base64": ({"notes": urllib.parse.quote(_b64(">>" + OPENAI), safe="")}, "openai-key", "url+base64"),
    "reversed base64": ({"notes": _b64(GITHUB)[::-1]}, "github-token", "reversed+base64"),
}


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_each_disguise_is_found_on_its_line(name):
    document, kind, layer = VARIANTS[name]
    lines = [json.dumps({"case": "a", "ok": True}), json.dumps(document, ensure_ascii=False), json.dumps({"case": "b"})]
    hits = scan_layers("\n".join(lines).encode(), json_documents="lines")
    assert (kind, 2, layer) in {(h.hit.kind, h.hit.line, h.layer) for h in hits}, hits
    for hit in hits:
        rendered = f"{hit} {hit.description}"
        for secret in (OPENAI, GITHUB, AWS, "hunter2"):
            assert secret[-10:] not in rendered


@pytest.mark.parametrize("text", [
    json.dumps({"manifest": {"sha256": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"}}),
    json.dumps({"id": "3b241101e2bb42558caf8ffbd3a7f2ce", "uuid": "3b241101-e2bb-4255-8caf-8ffbd3a7f2ce"}),
    json.dumps({"blob": base64.b64encode(random.Random(75).randbytes(48)).decode()}),
    json.dumps({"endpoint": "http://127.0.0.1:8081/v1/chat/completions", "model": "Qwen2.5-7B-Instruct-Q4_K_M"}),
    json.dumps({"path": "/v1/models/Qwen%2FQwen2.5-7B", "notes": "50%25 of cases"}),
    json.dumps({"a": "task-", "b": "runner"}),
    json.dumps({"endpoint": "http://127.0.0.1:8081", "contact": "bob@example.org"}),  # a port, not a password
    json.dumps({"endpoint": "http://127.0.0.1:8081/v1", "owner": "alice:ops@example.org"}),
    "diff --git a/x.py b/x.py\nindex 3b18e51..a9c8f0d 100644\n--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-old\n+new\n",
])
def test_ordinary_text_digests_and_random_ids_scan_clean(text):
    assert scan_layers(text.encode(), json_documents="lines") == []


def test_the_real_results_scan_clean_and_pass_no_gate_but_the_harmless():
    files = [path for path in REAL_RESULTS.rglob("*") if path.is_file()]
    assert files
    for path in files:
        documents = "lines" if path.suffix == ".jsonl" else "document" if path.suffix == ".json" else None
        assert scan_layers(path.read_bytes(), json_documents=documents) == [], path


def test_benchmark_rows_pass_no_gate():
    """What keeps the layers cheap: an ordinary row file is decided in one RE2 pass."""
    import random

    from bench.bundle_validate import _row

    rng = random.Random(3)
    data = "\n".join(_row(rng, i) for i in range(2000)).encode()
    assert layers_that_apply(data) == set()


def test_a_bundle_with_a_disguised_key_is_refused_with_the_layer_named(tmp_path):
    from tests.bundles.test_bundles_values import _rows
    from tests.hostile import _put, row, template_bundle

    bundle = template_bundle(tmp_path / "b")
    _put(bundle, "run.jsonl", _rows(row(), row(repetition=2, error="upstream said " + _b64(OPENAI))))
    findings = [f for f in validate_bundle(bundle).findings if f.code.startswith("secret.")]
    assert [(f.code, f.line) for f in findings] == [("secret.openai-key", 2)]
    assert "hidden as base64" in findings[0].message and OPENAI[-10:] not in findings[0].message
