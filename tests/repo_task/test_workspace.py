"""Disposable workspaces: a fresh, contained copy of the repo fixture per repetition."""

import os

import pytest

from benchpack.repo_task import RepoTaskError
from benchpack.repo_task.workspace import check_fixture_tree, prepare_workspace
from tests.repo_task.test_repo_task_support import tree_hash, write_repo_pack


def test_it_copies_the_repo_fixture_to_workspace_case_rep_001(tmp_path):
    pack = write_repo_pack(tmp_path, {"app.py": "x = 1\n", "pkg/mod.py": "y = 2\n"})
    fixture = pack.repo_fixture(pack.cases[0])
    ws = prepare_workspace(fixture, tmp_path / "out", "fix", 1)
    assert ws.path == (tmp_path / "out" / "workspace" / "fix" / "rep-001").resolve()
    assert (ws.path / "pkg" / "mod.py").read_text() == "y = 2\n"
    assert ws.record() == {"path": "workspace/fix/rep-001", "source_fixture_id": "repo", "source_path": "fixtures/repo"}


def test_it_gives_every_repetition_its_own_copy(tmp_path):
    pack = write_repo_pack(tmp_path, {"app.py": "x = 1\n"})
    fixture = pack.repo_fixture(pack.cases[0])
    first = prepare_workspace(fixture, tmp_path / "out", "fix", 1)
    (first.path / "app.py").write_text("mutated\n")
    second = prepare_workspace(fixture, tmp_path / "out", "fix", 2)
    assert second.relative_path == "workspace/fix/rep-002"
    assert (second.path / "app.py").read_text() == "x = 1\n"


def test_it_refuses_to_merge_into_an_existing_workspace(tmp_path):
    pack = write_repo_pack(tmp_path, {"app.py": "x = 1\n"})
    fixture = pack.repo_fixture(pack.cases[0])
    existing = tmp_path / "out" / "workspace" / "fix" / "rep-001"
    existing.mkdir(parents=True)
    (existing / "leftover.txt").write_text("old\n")
    with pytest.raises(RepoTaskError, match="already exists"):
        prepare_workspace(fixture, tmp_path / "out", "fix", 1)
    assert sorted(p.name for p in existing.iterdir()) == ["leftover.txt"]


def test_it_keeps_internal_relative_symlinks_as_links(tmp_path):
    pack = write_repo_pack(tmp_path, {"real/data.txt": "data\n"})
    repo = pack.root / "fixtures" / "repo"
    os.symlink("real/data.txt", repo / "alias.txt")
    os.symlink("real", repo / "alias-dir")
    ws = prepare_workspace(pack.repo_fixture(pack.cases[0]), tmp_path / "out", "fix", 1)
    assert os.readlink(ws.path / "alias.txt") == "real/data.txt"
    assert os.readlink(ws.path / "alias-dir") == "real"
    assert (ws.path / "alias.txt").read_text() == "data\n"


@pytest.mark.parametrize(
    "target, reason",
    [
        ("/etc/passwd", "absolute symlink"),
        ("../../benchpack.toml", "outside the fixture"),
        ("../repo/app.py", "outside the fixture"),  # resolves inside the source, but not inside a copy
    ],
)
def test_it_rejects_escaping_symlinks_before_copying(tmp_path, target, reason):
    pack = write_repo_pack(tmp_path, {"app.py": "x = 1\n"})
    os.symlink(target, pack.root / "fixtures" / "repo" / "link")
    before = tree_hash(pack.root)
    with pytest.raises(RepoTaskError, match=reason):
        prepare_workspace(pack.repo_fixture(pack.cases[0]), tmp_path / "out", "fix", 1)
    assert not (tmp_path / "out" / "workspace" / "fix" / "rep-001").exists()
    assert tree_hash(pack.root) == before


def test_it_rejects_a_chain_of_links_that_leaves_the_fixture(tmp_path):
    pack = write_repo_pack(tmp_path, {"sub/app.py": "x = 1\n"})
    repo = pack.root / "fixtures" / "repo"
    os.symlink("..", repo / "sub" / "up")  # fine alone: points at the fixture root
    os.symlink("sub/up/..", repo / "escape")  # lexically inside, really the pack's fixtures/ dir
    problems = check_fixture_tree(repo)
    assert any(p.startswith("escape:") and "resolves outside" in p for p in problems)


def test_it_rejects_fifos_instead_of_blocking_on_them(tmp_path):
    pack = write_repo_pack(tmp_path, {"app.py": "x = 1\n"})
    os.mkfifo(pack.root / "fixtures" / "repo" / "pipe")
    with pytest.raises(RepoTaskError, match="pipe: is not a regular file"):
        prepare_workspace(pack.repo_fixture(pack.cases[0]), tmp_path / "out", "fix", 1)


def test_it_never_writes_to_the_source_fixture(tmp_path):
    pack = write_repo_pack(tmp_path, {"app.py": "x = 1\n", "bin.dat": b"\x00\xff"})
    before = tree_hash(pack.root)
    ws = prepare_workspace(pack.repo_fixture(pack.cases[0]), tmp_path / "out", "fix", 1)
    (ws.path / "app.py").write_text("changed\n")
    (ws.path / "new.txt").write_text("new\n")
    assert tree_hash(pack.root) == before
