"""The static packs under tests/data/packs/: a complete repo-task pack loads with
every field, and a broken pack reports all of its problems at once."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from benchpack.errors import PackError
from benchpack.packs.loader import load_pack

PACKS = Path(__file__).parents[1] / "data" / "packs"


def test_it_loads_every_repo_task_field():
    pack = load_pack(PACKS / "repo-task-minimal")
    (case,) = pack.cases
    assert case.kind == "repo-task"
    assert pack.repo_fixture(case).resolved == (PACKS / "repo-task-minimal/fixtures/repo").resolve()
    assert case.harness.id == "fenced-patch" and case.harness.timeout_s == 10.0
    assert case.scoring.mode == "verify-script"
    assert (case.scoring.timeout_s, case.scoring.environment) == (20.0, {"BENCHPACK_CASE": "fix-add"})
    assert case.prompt.endswith(
        "--- BEGIN FIXTURE notes (context, fixtures/notes.md) ---\n"
        "`add` must return the sum of its two arguments.\n"
        "--- END FIXTURE notes ---"
    )


def test_its_verifier_fails_the_fixture_and_passes_a_fixed_copy(tmp_path):
    pack = load_pack(PACKS / "repo-task-minimal")
    script = str(pack.cases[0].scoring.script_resolved)
    workspace = tmp_path / "ws"
    shutil.copytree(pack.repo_fixture(pack.cases[0]).resolved, workspace)
    assert subprocess.run([sys.executable, script, "--workspace", str(workspace)]).returncode == 1
    (workspace / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    assert subprocess.run([sys.executable, script, "--workspace", str(workspace)]).returncode == 0


def test_it_reports_every_problem_of_the_broken_pack_in_one_error():
    with pytest.raises(PackError) as info:
        load_pack(PACKS / "broken")
    assert info.value.lines() == [
        "benchpack.toml: pack.id: 'broken pack' is not a valid id (must match ^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$)",
        "benchpack.toml: pack.version: is required and must be a non-empty string",
        "benchpack.toml: defaults.stream: must be true or false, got 'yes'",
        "benchpack.toml: fixtures[0].path: 'missing-dir' does not exist",
        "benchpack.toml: scoring.script: '/usr/bin/true' is an absolute path; use a path relative to the pack directory",
        "benchpack.toml: cases[0]: needs exactly one of prompt or prompt_file (has both)",
        "benchpack.toml: cases[1].kind: unknown case kind 'essay' (expected one of chat, completion, repo-task, replay)",
        "benchpack.toml: cases[1].prompt_file: is not valid UTF-8 text (byte offset 3)",
        "benchpack.toml: cases[1].fixture_refs[0]: unknown fixture 'nope' (not declared in [[fixtures]])",
        "benchpack.toml: cases[1].fixture_refs[1]: duplicate fixture ref 'nope'",
        "benchpack.toml: cases[2].harness.id: unknown harness 'magic' (expected one of fenced-patch, external-agent)",
        'benchpack.toml: cases[2].fixture_refs: repo-task cases need exactly one kind = "repo" directory fixture (found: none)',
        "benchpack.toml: cases[2].scoring.pattern: is not a valid regular expression: missing ), unterminated subpattern at position 0",
        "benchpack.toml: defaults.warmup: warmups are not supported for repo-task cases (c); set it to 0",
    ]
