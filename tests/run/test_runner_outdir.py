"""The output-directory rules: no mixing of runs, and --force never deletes evidence."""

import pytest

from benchpack.errors import ConfigError
from benchpack.results.resultdir import read_rows
from benchpack.run.runner import run_pack
from tests.run.test_runner_support import ScriptedAdapter, make_pack, options


def previous_result(path):
    path.mkdir(parents=True, exist_ok=True)
    (path / "hardware.json").write_text("{}\n")
    (path / "run.jsonl").write_text('{"case": "old"}\n')
    return path


def test_it_refuses_a_non_empty_output_dir_without_force(tmp_path):
    out = previous_result(tmp_path / "out")
    adapter = ScriptedAdapter()
    with pytest.raises(ConfigError) as info:
        run_pack(make_pack(tmp_path), options(tmp_path), adapter=adapter)
    assert "--force" in str(info.value)
    assert (out / "run.jsonl").read_text() == '{"case": "old"}\n'
    assert adapter.requests == []


def test_it_replaces_a_previous_result_dir_with_force(tmp_path):
    out = previous_result(tmp_path / "out")
    (out / "raw").mkdir()
    (out / "raw" / "stale.request.json").write_text("{}")
    run_pack(make_pack(tmp_path), options(tmp_path, force=True), adapter=ScriptedAdapter())
    assert [r["case"] for r in read_rows(out / "run.jsonl")] == ["alpha", "beta"]
    assert not (out / "raw" / "stale.request.json").exists()


def test_it_refuses_a_file_as_output_dir(tmp_path):
    (tmp_path / "out").write_text("not a dir")
    with pytest.raises(ConfigError):
        run_pack(make_pack(tmp_path), options(tmp_path, force=True), adapter=ScriptedAdapter())
    assert (tmp_path / "out").read_text() == "not a dir"


def test_it_refuses_to_force_replace_something_that_is_not_a_result_dir(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "thesis.tex").write_text("years of work")
    with pytest.raises(ConfigError):
        run_pack(make_pack(tmp_path), options(tmp_path, force=True), adapter=ScriptedAdapter())
    assert (out / "thesis.tex").exists()


def test_it_refuses_to_force_replace_the_current_directory(tmp_path, monkeypatch):
    cwd = previous_result(tmp_path / "work")
    monkeypatch.chdir(cwd)
    with pytest.raises(ConfigError) as info:
        run_pack(make_pack(tmp_path), options(tmp_path, out=cwd.parent / "work", force=True), adapter=ScriptedAdapter())
    assert "current directory" in str(info.value)
    assert (cwd / "run.jsonl").exists()


def test_it_refuses_to_force_replace_a_parent_of_home(tmp_path, monkeypatch):
    home = tmp_path / "users" / "me"
    home.mkdir(parents=True)
    previous_result(tmp_path / "users")  # hardware.json next to the home dir
    monkeypatch.setenv("HOME", str(home))
    with pytest.raises(ConfigError) as info:
        run_pack(make_pack(tmp_path), options(tmp_path, out=tmp_path / "users", force=True), adapter=ScriptedAdapter())
    assert "home directory" in str(info.value)
    assert home.exists()


@pytest.mark.parametrize("where", ["inside", "pack", "parent"])
def test_it_refuses_to_force_replace_a_dir_inside_or_containing_the_pack(tmp_path, where):
    pack = make_pack(tmp_path / "packs")
    out = {"inside": pack.root / "results", "pack": pack.root, "parent": pack.root.parent}[where]
    previous_result(out) if where == "inside" else (out / "hardware.json").write_text("{}")
    with pytest.raises(ConfigError) as info:
        run_pack(pack, options(tmp_path, out=out, force=True), adapter=ScriptedAdapter())
    assert "pack" in str(info.value)
    assert pack.manifest_path.exists() and (out / "hardware.json").exists()


def test_it_refuses_to_force_replace_through_a_symlink_or_into_a_dangling_one(tmp_path):
    target = previous_result(tmp_path / "real")
    (tmp_path / "link").symlink_to(target)
    with pytest.raises(ConfigError):
        run_pack(make_pack(tmp_path), options(tmp_path, out=tmp_path / "link", force=True), adapter=ScriptedAdapter())
    assert (target / "run.jsonl").exists()
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    with pytest.raises(ConfigError):
        run_pack(make_pack(tmp_path), options(tmp_path, out=tmp_path / "dangling"), adapter=ScriptedAdapter())
    assert not (tmp_path / "nowhere").exists()
