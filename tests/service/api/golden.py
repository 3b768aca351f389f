"""Golden response files for the API: tests/service/api/golden/<name>.json.

Responses are normalised before comparison so they do not depend on the
order tests ran in or the clock: run ids become the catalogue fixture's names
(`<run smoke>`), timestamps `<datetime>`. Keys are sorted.

Regenerate after an intended change of a response's shape:

    BENCHPACK_REGENERATE_GOLDEN=1 uv run pytest tests/service/api/test_golden.py tests/service/api/test_schema.py

and review the diff of tests/service/api/golden/ like code. A test whose file the
switch rewrote with a different answer fails (run again to see them pass), and
under CI (`CI` set) the switch itself is a failure: CI only compares.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path

from tests.environment import under_ci

GOLDEN = Path(__file__).resolve().parent / "golden"
REGENERATE = os.environ.get("BENCHPACK_REGENERATE_GOLDEN") == "1"
DATETIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?$")
RUN_ID_KEYS = {"id", "run", "run_id", "representative_run"}


def normalise(value, run_names: dict[int, str]):
    def name(pk):
        return f"<run {run_names.get(pk, 'unknown')}>"

    if isinstance(value, dict):
        return {k: (name(v) if k in RUN_ID_KEYS and isinstance(v, int) else normalise(v, run_names))
                for k, v in sorted(value.items())}
    if isinstance(value, list):
        return [normalise(v, run_names) for v in value]
    if isinstance(value, str):
        if DATETIME.match(value):
            return "<datetime>"
        value = re.sub(r"/runs/(\d+)/", lambda m: f"/runs/{name(int(m.group(1)))}/", value)
        # "#12" is how compare names a run, also inside its warnings' sentences
        return re.sub(r"#(\d+)\b", lambda m: f"#{name(int(m.group(1)))}" if int(m.group(1)) in run_names
                      else m.group(0), value)
    return value


def assert_matches_golden(name: str, body) -> None:
    path = GOLDEN / f"{name}.json"
    text = json.dumps(body, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    if REGENERATE and under_ci():
        # CI compares, never rewrites: a regenerate switch left set in CI's environment would make every golden
        # test pass whatever the API answers.
        raise AssertionError("BENCHPACK_REGENERATE_GOLDEN is set under CI (CI is set); golden files are compared "
                             "there, never rewritten (tests/service/api/golden.py)")
    if REGENERATE or not path.exists():
        GOLDEN.mkdir(parents=True, exist_ok=True)
        before = path.read_text() if path.exists() else None
        path.write_text(text)
        # Regenerating still fails when it changed a file, so that even with the switch set a test reports
        # every difference (review the diff, then run again: an unchanged answer passes).
        if before is None:
            raise AssertionError(f"{path} did not exist and was written; review and commit it")
        if before != text:
            raise AssertionError(f"{name}: {path} was rewritten with a different answer; review its diff and "
                                 "run again (BENCHPACK_REGENERATE_GOLDEN=1)")
        return
    expected = path.read_text()
    if text != expected:
        actual = Path(tempfile.gettempdir()) / "benchpack-golden-actual" / f"{name}.json"
        actual.parent.mkdir(parents=True, exist_ok=True)
        actual.write_text(text)
        raise AssertionError(f"{name}: the response differs from {path} (this answer: {actual}); if the change is "
                             "intended, regenerate with BENCHPACK_REGENERATE_GOLDEN=1 (tests/service/api/golden.py)")
