"""Raw request/response files: msgspec writes the text json.dumps(indent=2, ensure_ascii=False) wrote."""

import json
from pathlib import Path

from benchpack.run.runner import _write_json


def test_raw_files_read_as_before(tmp_path: Path):
    payload = {
        "model": "m", "stream": True, "messages": [{"role": "user", "content": "héllo — \u2028 \"quoted\"\n"}],
        "events": [{"choices": [{"delta": {"content": "tok"}, "index": 0}], "usage": None}, {}, []],
        "timings": {"prompt_ms": 12.5, "n": 3, "ratio": 0.1, "neg": -2, "big": 12345678901234567890},
        "empty": {}, "none": None, "path": Path("/x/y"),
    }
    target = tmp_path / "r.json"
    _write_json(target, payload)
    expected = json.dumps(payload, indent=2, ensure_ascii=False, default=str) + "\n"
    assert target.read_text(encoding="utf-8") == expected
    assert json.loads(target.read_text(encoding="utf-8"))["path"] == "/x/y"
