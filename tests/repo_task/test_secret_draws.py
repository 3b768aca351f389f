"""Hidden probes are drawn per execution from a secret seed, and a verdict can be re-checked
from the seed recorded in the verifier's private JSON. Real runner, executor, sandbox and the
bundled patch-from-failure verifier."""

from __future__ import annotations

import json

import pytest

from benchpack.packs.loader import bundled_packs_dir, load_pack
from benchpack.repo_task.integration import RepoTaskExecutor
from tests.repo_task.test_repo_task_support import adapter_result, run_options

pytestmark = pytest.mark.bubblewrap

PACK = bundled_packs_dir() / "patch-from-failure"
AUDIT = PACK / "audit" / "fix-split-bill"


def execute(tmp_path, answer: str, repetition: int) -> dict:
    pack = load_pack(PACK)
    executor = RepoTaskExecutor(pack, run_options(tmp_path), grace_s=0.3)
    execution = executor.prepare(pack.cases[0], repetition, tmp_path / "out")
    row = executor.finish(execution, adapter_result(answer))
    return json.loads((tmp_path / "out" / row["verify"]["path"]).read_text())


@pytest.fixture(autouse=True)
def own_home(tmp_path, monkeypatch):
    (tmp_path / "home").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("BENCHPACK_VERIFY_SEED", raising=False)


def test_two_executions_draw_different_probes_and_a_recorded_seed_redraws_the_same(tmp_path, monkeypatch):
    answer = (AUDIT / "known-good.md").read_text()
    first, second = execute(tmp_path, answer, 1), execute(tmp_path, answer, 2)
    assert first["outcome"] == second["outcome"] == "pass"
    assert first["seed"] != second["seed"]
    assert first["hidden"]["hidden-tests"]["probes_sha256"] != second["hidden"]["hidden-tests"]["probes_sha256"]

    monkeypatch.setenv("BENCHPACK_VERIFY_SEED", first["seed"])
    again = execute(tmp_path, answer, 3)
    assert again["seed"] == first["seed"]
    assert again["hidden"]["hidden-tests"] == first["hidden"]["hidden-tests"]
    assert again["outcome"] == "pass"


def test_a_failing_verdict_is_rechecked_exactly_from_its_seed(tmp_path, monkeypatch):
    """The memorised-probes cheat answers every published input; only the draw catches it,
    and the re-check reproduces the same failures."""
    answer = (AUDIT / "cheat-memorised-probes.md").read_text()
    verdict = execute(tmp_path, answer, 1)
    assert verdict["outcome"] == "fail" and verdict["failed_checks"] == ["hidden-tests"]
    failures = verdict["hidden"]["hidden-tests"]["failures"]
    assert failures and all(f.startswith("drawn-") for f in failures)  # every fixed probe was answered right

    monkeypatch.setenv("BENCHPACK_VERIFY_SEED", verdict["seed"])
    recheck = execute(tmp_path, answer, 2)
    assert recheck["hidden"]["hidden-tests"] == verdict["hidden"]["hidden-tests"]
    assert recheck["outcome"] == "fail"
