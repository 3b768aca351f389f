"""The internal agent-session harness and its D-022 workspace helpers."""

import os

import pytest

from benchpack.repo_task import RepoTaskError
from benchpack.repo_task.executors import AgentSessionRequest, AgentSessionResult, run_agent_session, task_paths
from benchpack.repo_task.integration import RepoTaskExecutor
from benchpack.repo_task.session import UnsafeWorkspacePath, WorkspaceFiles
from tests.repo_task.test_repo_task_support import adapter_result, run_options, tree_hash, write_repo_pack


@pytest.fixture
def files(tmp_path):
    root = tmp_path / "ws"
    (root / "pkg" / "deep").mkdir(parents=True)
    (root / "empty").mkdir()
    (root / "a.txt").write_text("a\n")
    (root / "pkg" / "deep" / "b.py").write_text("b\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret\n")
    os.symlink("a.txt", root / "link-in")
    os.symlink(str(outside / "secret.txt"), root / "link-out")
    os.symlink("pkg", root / "link-dir")
    os.symlink("missing.txt", root / "dangling")
    return WorkspaceFiles(root)


def test_it_lists_regular_files_and_in_workspace_file_links_sorted(files):
    assert files.list_files() == ["a.txt", "link-in", "pkg/deep/b.py"]


def test_it_lists_nested_real_directories_only(files):
    assert files.list_dirs() == ["empty", "pkg", "pkg/deep"]


def test_it_sees_files_and_directories_created_during_the_session(files):
    files.write_text("new/dir/c.txt", "c\n")
    assert "new/dir/c.txt" in files.list_files()
    assert {"new", "new/dir"} <= set(files.list_dirs())


def test_it_checks_existence_of_regular_files_only(files):
    assert files.exists("a.txt") and files.exists("link-in")
    assert not files.exists("pkg") and not files.exists("nope.txt") and not files.exists("dangling")


def test_it_reads_and_writes_utf8_text(files):
    files.write_text("pkg/deep/b.py", "grüß\n")
    assert files.read_text("pkg/deep/b.py") == "grüß\n"


@pytest.mark.parametrize("path", ["../x", "/etc/passwd", ".git/config", "", "link-out", "link-dir/../../x", "a\\b"])
def test_it_refuses_paths_outside_the_workspace(files, path):
    with pytest.raises(UnsafeWorkspacePath):
        files.resolve(path)


def test_it_deletes_files_and_link_entries_but_never_link_targets(files):
    assert files.delete("link-in") is True
    assert not os.path.lexists(files.root / "link-in") and (files.root / "a.txt").exists()
    assert files.delete("a.txt") is True and not (files.root / "a.txt").exists()
    assert files.delete("missing.txt") is False
    assert files.delete("pkg") is False and (files.root / "pkg").is_dir()


def test_it_treats_unsafe_delete_paths_as_runner_failures(files, tmp_path):
    with pytest.raises(RepoTaskError):
        files.delete("link-out")
    assert (tmp_path / "outside" / "secret.txt").exists()


@pytest.mark.bubblewrap
def test_it_runs_an_in_process_harness_behind_the_executor_boundary(tmp_path):
    pack = write_repo_pack(tmp_path, {"app.py": "x = 1\n"}, verifier="raise SystemExit(0)\n")
    before = tree_hash(pack.root)
    seen = {}

    def harness(request):
        seen["files"] = request.files.list_files()
        seen["model_output"] = request.model_output
        request.files.write_text("app.py", "x = 2\n")
        return AgentSessionResult(stdout="edited app.py\n", stderr="")

    executor = RepoTaskExecutor(pack, run_options(tmp_path), agent_session_harness=harness)
    row = executor.finish(executor.prepare(pack.cases[0], 1, tmp_path / "out"), adapter_result("please"))
    out = tmp_path / "out"
    assert seen == {"files": ["app.py"], "model_output": "please"}
    assert (out / "task/fix/rep-001.stdout.log").read_text() == "edited app.py\n"
    assert "+x = 2" in (out / "patch/fix/rep-001.diff").read_text()
    assert row["repo_task"]["status"] == "passed"
    assert tree_hash(pack.root) == before


def test_it_refuses_a_task_timeout_for_in_process_harnesses(tmp_path):
    calls = []
    request = AgentSessionRequest(None, 1, tmp_path, tmp_path, "", task_paths(tmp_path, "fix", 1), WorkspaceFiles(tmp_path))
    with pytest.raises(RepoTaskError, match="task timeouts cannot be combined with an in-process harness"):
        run_agent_session(lambda r: calls.append(r) or AgentSessionResult(), request, timeout_s=5)
    assert calls == []
