"""Agent recipes: names, pinned environments, the argv the harness starts, and bad input as one clear error."""

from __future__ import annotations

import pytest

from benchpack import cli
from benchpack.agents import recipes
from benchpack.errors import ConfigError


def test_every_recipe_is_pinned_and_its_kit_exists():
    for r in recipes.RECIPES.values():
        assert r.requirement == f"{r.package}=={r.version}" and r.version[0].isdigit()
        assert (recipes.KITS / r.kit).is_file()


def test_the_environment_lives_under_the_agents_home_and_counts_only_when_complete(tmp_path, monkeypatch):
    monkeypatch.setenv(recipes.HOME_ENV, str(tmp_path))
    r = recipes.RECIPES["mini-swe-agent"]
    venv = recipes.venv_path(r)
    assert venv == tmp_path / "mini-swe-agent-2.4.6"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").touch()
    assert not recipes.installed(r)  # no marker: an interrupted install is made again
    (venv / recipes.MARKER).write_text(r.requirement)
    assert recipes.installed(r)
    assert recipes.ensure_installed(r) == venv


def test_the_argv_binds_the_whole_environment_and_takes_a_step_limit(tmp_path):
    r = recipes.RECIPES["mini-swe-agent"]
    argv = recipes.agent_argv(r, tmp_path, steps=5)
    assert argv[:4] == [str(tmp_path / "bin" / "python"), str(recipes.KITS / r.kit), "--agent-home", str(tmp_path)]
    assert argv[argv.index("--step-limit") + 1] == "5" and argv.count("--step-limit") == 1
    with pytest.raises(ConfigError, match="has no step limit"):
        recipes.agent_argv(recipes.RECIPES["aider"], tmp_path, steps=3)


def test_an_agent_for_a_pack_without_coding_tasks_is_one_clear_error_with_exit_2(capsys, tmp_path):
    code = cli.main(["run", "smoke-chat", "--adapter", "openai-chat", "--model", "m",
                     "--endpoint", "http://127.0.0.1:9/v1", "--out", str(tmp_path / "o"), "--agent", "aider"])
    err = capsys.readouterr().err
    assert code == 2 and "--agent: aider: pack smoke-chat has no repo-task case" in err
    assert not (tmp_path / "o").exists()


def test_an_unknown_recipe_is_one_clear_error_with_exit_2(capsys, tmp_path):
    code = cli.main(["run", "python-regression-fix", "--adapter", "openai-chat", "--model", "m",
                     "--endpoint", "http://127.0.0.1:9/v1", "--out", str(tmp_path / "o"), "--agent", "nope"])
    err = capsys.readouterr().err
    assert code == 2
    assert "--agent: nope: unknown agent recipe; built in: aider, mini-swe-agent" in err
    assert "Traceback" not in err
