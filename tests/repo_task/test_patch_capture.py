"""The directory-snapshot diff recorded at patch/<case>/rep-NNN.diff."""

import os
import shutil
import subprocess

from benchpack.repo_task.patch import capture_patch, diff_trees


def make_tree(root, files):
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return root


def test_it_writes_an_empty_patch_file_when_nothing_changed(tmp_path):
    source = make_tree(tmp_path / "a", {"x.py": "x = 1\n"})
    workspace = make_tree(tmp_path / "b", {"x.py": "x = 1\n"})
    (workspace / "empty-dir").mkdir()
    record = capture_patch(source, workspace, tmp_path / "out", "fix", 1)
    assert record == {"path": "patch/fix/rep-001.diff"}
    assert (tmp_path / "out" / "patch" / "fix" / "rep-001.diff").read_bytes() == b""


def test_it_emits_unified_diffs_for_text_changes_in_sorted_path_order(tmp_path):
    source = make_tree(tmp_path / "a", {"b.py": "keep\nold\n", "z/gone.txt": "bye\n"})
    workspace = make_tree(tmp_path / "b", {"b.py": "keep\nnew\n", "a/added.txt": "hi\n"})
    text = diff_trees(source, workspace)
    headers = [line for line in text.splitlines() if line.startswith("diff --git")]
    assert headers == ["diff --git a/a/added.txt b/a/added.txt", "diff --git a/b.py b/b.py",
                       "diff --git a/z/gone.txt b/z/gone.txt"]
    assert "-old\n+new\n" in text
    assert "--- /dev/null\n+++ b/a/added.txt\n@@ -0,0 +1 @@\n+hi\n" in text
    assert "--- a/z/gone.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n" in text


def test_it_ignores_line_ending_only_changes(tmp_path):
    source = make_tree(tmp_path / "a", {"x.txt": "one\r\ntwo\r\n"})
    workspace = make_tree(tmp_path / "b", {"x.txt": "one\ntwo\n"})
    assert diff_trees(source, workspace) == ""


def test_it_marks_binary_changes_with_one_line(tmp_path):
    source = make_tree(tmp_path / "a", {"img.bin": b"\x00\x01", "old.bin": b"\xff\xfe"})
    workspace = make_tree(tmp_path / "b", {"img.bin": b"\x00\x02", "new.bin": b"\xff\x00"})
    text = diff_trees(source, workspace)
    assert "Binary files a/img.bin and b/img.bin differ\n" in text
    assert "Binary file b/new.bin added\n" in text
    assert "Binary file a/old.bin deleted\n" in text


def test_it_diffs_symlink_targets_as_text(tmp_path):
    source = make_tree(tmp_path / "a", {"one.txt": "1\n", "two.txt": "2\n"})
    os.symlink("one.txt", source / "link")
    workspace = tmp_path / "b"
    shutil.copytree(source, workspace, symlinks=True)
    (workspace / "link").unlink()
    os.symlink("two.txt", workspace / "link")
    text = diff_trees(source, workspace)
    assert "-one.txt\n\\ No newline at end of file\n+two.txt\n\\ No newline at end of file\n" in text
    assert "+2" not in text  # the link target's content is not followed


def test_it_is_deterministic(tmp_path):
    source = make_tree(tmp_path / "a", {f"f{i}.txt": f"{i}\n" for i in range(20)})
    workspace = make_tree(tmp_path / "b", {f"f{i}.txt": f"{i * 2}\n" for i in range(20)})
    assert diff_trees(source, workspace) == diff_trees(source, workspace)


def test_it_produces_a_patch_git_apply_replays_exactly(tmp_path):
    source = make_tree(tmp_path / "a", {"f.txt": "one\ntwo\nthree\n", "nonl": "x", "sub/gone": "del\n",
                                        "keep.txt": "".join(f"{i}\n" for i in range(30))})
    os.symlink("f.txt", source / "link")
    workspace = tmp_path / "b"
    shutil.copytree(source, workspace, symlinks=True)
    (workspace / "f.txt").write_text("one\nTWO\nthree\n")
    (workspace / "nonl").write_text("y")
    (workspace / "sub" / "gone").unlink()
    (workspace / "sub" / "added").write_text("new\n")
    (workspace / "emptyfile").write_text("")
    (workspace / "keep.txt").write_text("".join(f"{i}\n" for i in range(30) if i != 15))
    (workspace / "link").unlink()
    os.symlink("nonl", workspace / "link")
    (tmp_path / "p.diff").write_text(diff_trees(source, workspace))
    replay = tmp_path / "c"
    shutil.copytree(source, replay, symlinks=True)
    subprocess.run(["git", "apply", str(tmp_path / "p.diff")], cwd=replay, check=True,
                   env={"PATH": os.environ["PATH"], "GIT_CEILING_DIRECTORIES": str(tmp_path)})
    assert diff_trees(workspace, replay) == ""


def test_it_never_opens_fifos_in_the_workspace(tmp_path):
    source = make_tree(tmp_path / "a", {"x": "1\n"})
    workspace = make_tree(tmp_path / "b", {"x": "1\n"})
    os.mkfifo(workspace / "pipe")
    assert diff_trees(source, workspace) == "Special file b/pipe skipped\n"
