"""The fenced-patch executor: model output → `git apply` (or a path-marked file) inside the workspace."""

import os
import stat
import subprocess
import textwrap

import pytest

from benchpack.repo_task import RepoTaskError
from benchpack.repo_task.executors import MAX_PATCH_BLOCK_BYTES, fenced_patch_text, run_fenced_patch, task_paths
from benchpack.repo_task.fenced import extract_fenced_block
from tests.repo_task.test_repo_task_support import GREETING_FIX, fenced, tree_hash

UNCHANGED = "; workspace left unchanged.\n"


@pytest.fixture
def workspace(tmp_path):
    ws = tmp_path / "out" / "workspace" / "fix" / "rep-001"
    ws.mkdir(parents=True)
    (ws / "app.py").write_text("def greet():\n    return 'helo'\n")
    return ws


def test_it_applies_the_first_fenced_diff_and_reports_success_on_stdout(workspace, tmp_path):
    paths = task_paths(tmp_path / "out", "fix", 1)
    text = run_fenced_patch(workspace, fenced(GREETING_FIX), paths)
    assert (workspace / "app.py").read_text() == "def greet():\n    return 'hello'\n"
    assert paths.stdout.read_text() == "Applied fenced diff block with git apply --recount: app.py\n"
    assert paths.stderr.read_text() == "" == text.stderr


def test_it_accepts_model_diffs_with_wrong_hunk_counts(workspace):
    wrong_counts = GREETING_FIX.replace("@@ -1,2 +1,2 @@", "@@ -1,7 +1,9 @@")
    text = fenced_patch_text(workspace, fenced(wrong_counts, "patch"))
    assert text.stderr == ""
    assert "'hello'" in (workspace / "app.py").read_text()


def test_it_skips_other_fenced_blocks_and_uses_only_the_first_diff(workspace):
    other = GREETING_FIX.replace("'hello'", "'second'")
    output = "```python\nprint('not a patch')\n```\n" + "```diff title\nnope\n```\n" + fenced(GREETING_FIX) + fenced(other)
    fenced_patch_text(workspace, output)
    assert "'hello'" in (workspace / "app.py").read_text()


@pytest.mark.parametrize(
    "output, message",
    [
        ("No code here.", "No fenced diff or patch block found in model output"),
        ("```py\nx\n```", "No fenced diff or patch block found in model output"),
        ("```diff\n\n   \n```", "Fenced diff block is empty"),
        ("```patch\njust words\n```", "Fenced patch block has no file headers (not a unified diff or '*** Begin File:' block)"),
    ],
)
def test_it_leaves_the_workspace_unchanged_without_a_usable_block(workspace, output, message):
    before = tree_hash(workspace)
    text = fenced_patch_text(workspace, output)
    assert text == type(text)("", message + UNCHANGED)
    assert tree_hash(workspace) == before


@pytest.mark.parametrize(
    "old, new, reason",
    [
        ("a/app.py", "a/../outside.py", "'..' components are not allowed"),
        ("a/app.py", "/tmp/evil.py", "absolute paths are not allowed"),
        ("a/app.py", "a/.git/config", ".git paths are not allowed"),
    ],
)
def test_it_refuses_diffs_that_touch_unsafe_paths(workspace, tmp_path, old, new, reason):
    body = GREETING_FIX.replace("--- a/app.py", f"--- {old}").replace("+++ b/app.py", f"+++ {new}")
    before = tree_hash(tmp_path)
    text = fenced_patch_text(workspace, fenced(body))
    assert text.stdout == ""
    assert text.stderr == f"Unsafe patch path {new!r}: {reason}" + UNCHANGED
    assert tree_hash(tmp_path) == before


def test_it_refuses_diffs_that_write_through_a_symlink_out_of_the_workspace(workspace, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "app.py").write_text("def greet():\n    return 'helo'\n")
    os.symlink(outside, workspace / "escape")
    body = GREETING_FIX.replace("a/app.py", "a/escape/app.py").replace("b/app.py", "b/escape/app.py")
    text = fenced_patch_text(workspace, fenced(body))
    assert text.stderr.startswith("Unsafe patch path 'a/escape/app.py': resolves outside the workspace")
    assert "'helo'" in (outside / "app.py").read_text()


def test_it_refuses_diffs_that_create_a_symlink_pointing_outside(workspace):
    body = "diff --git a/link b/link\nnew file mode 120000\n--- /dev/null\n+++ b/link\n@@ -0,0 +1 @@\n+../../../../etc\n\\ No newline at end of file\n"
    text = fenced_patch_text(workspace, fenced(body))
    assert text.stderr == "Unsafe symlink 'link' -> '../../../../etc': target points outside the workspace" + UNCHANGED
    assert not os.path.lexists(workspace / "link")


def link_section(path: str, target: str) -> str:
    return (f"diff --git a/{path} b/{path}\nnew file mode 120000\n--- /dev/null\n+++ b/{path}\n@@ -0,0 +1 @@\n"
            f"+{target}\n\\ No newline at end of file\n")  # fmt: skip


def test_it_removes_every_link_of_a_chain_that_resolves_outside(workspace):
    """Issue 31 item 7: `hop -> sub/back/..` looks inside lexically, but `sub/back -> ..` is the
    workspace root, so `hop` lands in the workspace's parent. Each link is judged by where its
    whole chain ends, and every escaping one is removed."""
    (workspace / "sub").mkdir()
    before = tree_hash(workspace)
    body = GREETING_FIX + link_section("sub/back", "..") + link_section("hop", "sub/back/..") + link_section("hop2", "hop/etc")
    text = fenced_patch_text(workspace, fenced(body))
    assert text.stderr.startswith("Unsafe symlink 'hop'"), text.stderr
    assert not os.path.lexists(workspace / "hop") and not os.path.lexists(workspace / "hop2")
    # the whole patch is undone, as the refusal says ("workspace left unchanged")
    assert not os.path.lexists(workspace / "sub" / "back") and tree_hash(workspace) == before


def binary_symlink_section(path: str, target: bytes) -> str:
    """A real `GIT binary patch` section that makes `path` a symlink to `target` (git applies it)."""
    import base64
    import hashlib
    import zlib

    data = zlib.compress(target)
    lines = []
    for start in range(0, len(data), 52):
        chunk = data[start:start + 52]
        size = chr(ord("A") + len(chunk) - 1) if len(chunk) <= 26 else chr(ord("a") + len(chunk) - 27)
        lines.append(size + base64.b85encode(chunk, pad=True).decode())
    blob = hashlib.sha1(b"blob %d\0" % len(target) + target).hexdigest()
    return (f"diff --git a/{path} b/{path}\nnew file mode 120000\nindex {'0' * 40}..{blob}\nGIT binary patch\n"
            f"literal {len(target)}\n" + "\n".join(lines) + "\n\nliteral 0\nHcmV?d00001\n\n")  # fmt: skip


def test_git_itself_writes_a_symlink_from_a_binary_patch(tmp_path):
    """The premise: without the check, `git apply` creates the link."""
    (tmp_path / "ws").mkdir()
    subprocess.run(["git", "apply"], cwd=tmp_path / "ws", input=binary_symlink_section("link", b"/etc/passwd").encode(),
                   check=True, capture_output=True)  # fmt: skip
    assert os.readlink(tmp_path / "ws" / "link") == "/etc/passwd"


def test_it_refuses_a_symlink_written_by_a_git_binary_patch(workspace):
    before = tree_hash(workspace)
    body = GREETING_FIX + binary_symlink_section("notes", b"/etc/passwd")
    text = fenced_patch_text(workspace, fenced(body))
    assert text.stderr == "Unsafe symlink 'notes': written by a binary patch (a link target must be a text diff)" + UNCHANGED
    assert not os.path.lexists(workspace / "notes") and tree_hash(workspace) == before


def test_it_reports_git_messages_when_a_diff_does_not_apply(workspace):
    body = GREETING_FIX.replace("-    return 'helo'", "-    return 'something else'")
    before = tree_hash(workspace)
    text = fenced_patch_text(workspace, fenced(body))
    assert text.stderr.startswith("Patch does not apply cleanly" + UNCHANGED + "git apply --check --recount:\n")
    assert "git apply --check:\n" in text.stderr and "app.py" in text.stderr
    assert tree_hash(workspace) == before


def test_it_refuses_enormous_patch_blocks(workspace):
    huge = GREETING_FIX + "+" + "x" * MAX_PATCH_BLOCK_BYTES + "\n"
    text = fenced_patch_text(workspace, fenced(huge))
    assert text.stderr.startswith("Fenced diff block is too large (")
    assert "'helo'" in (workspace / "app.py").read_text()


def test_it_applies_inside_an_enclosing_git_repository_and_ignores_git_env(workspace, tmp_path, monkeypatch):
    # A result directory inside a checkout must not make git apply patch the checkout's paths.
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    monkeypatch.setenv("GIT_DIR", str(tmp_path / "nonexistent"))
    text = fenced_patch_text(workspace, fenced(GREETING_FIX))
    assert text.stderr == ""
    assert "'hello'" in (workspace / "app.py").read_text()
    assert not (tmp_path / "app.py").exists()


def slow_git(tmp_path, monkeypatch, slow_when):
    """A `git` on PATH that sleeps for the chosen call, then runs the real git."""
    real = subprocess.run(["which", "git"], capture_output=True, text=True, check=True).stdout.strip()
    bindir = tmp_path / "bin"
    bindir.mkdir()
    script = bindir / "git"
    script.write_text(textwrap.dedent(f"""\
        #!/bin/sh
        case " $* " in *" --check "*) check=yes;; *) check=no;; esac
        if [ "$check" = "{slow_when}" ]; then sleep 30; fi
        exec {real} "$@"
    """))
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")


def test_it_records_a_preflight_timeout_as_a_task_outcome(workspace, tmp_path, monkeypatch):
    slow_git(tmp_path, monkeypatch, slow_when="yes")
    text = fenced_patch_text(workspace, fenced(GREETING_FIX), timeout_s=0.3)
    assert text.stderr == "git apply --check --recount timed out after 0.3 seconds" + UNCHANGED
    assert "'helo'" in (workspace / "app.py").read_text()


def test_it_treats_an_apply_timeout_after_preflight_as_a_runner_failure(workspace, tmp_path, monkeypatch):
    slow_git(tmp_path, monkeypatch, slow_when="no")
    with pytest.raises(RepoTaskError, match="timed out after 0.3 seconds after a successful preflight"):
        fenced_patch_text(workspace, fenced(GREETING_FIX), timeout_s=0.3)


# -- D-031 path-marked replacement blocks -------------------------------------


def test_it_writes_a_path_marked_replacement_file_with_lf_endings(workspace):
    output = "```diff\r\n*** Begin File: pkg/new.py\r\nline 1\r\nline 2\r\n*** End File   \r\n```\r\n"
    text = fenced_patch_text(workspace, output)
    assert text.stdout == "Wrote replacement file pkg/new.py from fenced diff block\n"
    assert (workspace / "pkg" / "new.py").read_bytes() == b"line 1\nline 2\n"


def test_it_replaces_an_existing_file_and_keeps_its_mode(workspace):
    (workspace / "app.py").chmod(0o755)
    fenced_patch_text(workspace, fenced("*** Begin File: app.py\nprint('hi')\n*** End File\n", "patch"))
    assert (workspace / "app.py").read_text() == "print('hi')\n"
    assert os.access(workspace / "app.py", os.X_OK)


@pytest.mark.parametrize(
    "body, message",
    [
        ("*** Begin File: app.py\nx = 1\n", "Invalid '*** Begin File:' block: missing final '*** End File' marker line"),
        ("*** Begin File: app.py\n\n*** End File\n", "Invalid '*** Begin File:' block: replacement content is empty"),
        ("*** Begin File:   \nx\n*** End File\n", "Invalid '*** Begin File:' block: '*** Begin File:' names no path"),
        ("*** Begin File: a.py\nx\n*** Begin File: b.py\ny\n*** End File\n",
         "Invalid '*** Begin File:' block: only one file per block: found a second marker line inside the content"),
        ("*** Begin File: ../evil.py\nx\n*** End File\n", "Unsafe replacement path '../evil.py': '..' components are not allowed"),
        ("*** Begin File: /tmp/evil.py\nx\n*** End File\n", "Unsafe replacement path '/tmp/evil.py': absolute paths are not allowed"),
        ("*** Begin File: .git/hooks/pre-commit\nx\n*** End File\n",
         "Unsafe replacement path '.git/hooks/pre-commit': .git paths are not allowed"),
        ("*** Begin File: pkg\nx\n*** End File\n", "Replacement path 'pkg' is a directory"),
    ],
)
def test_it_rejects_bad_replacement_blocks_without_touching_the_workspace(workspace, tmp_path, body, message):
    (workspace / "pkg").mkdir()
    before = tree_hash(tmp_path)
    text = fenced_patch_text(workspace, fenced(body))
    assert text.stderr == message + UNCHANGED
    assert tree_hash(tmp_path) == before


def test_it_refuses_a_replacement_through_a_symlink_out_of_the_workspace(workspace, tmp_path):
    os.symlink(tmp_path, workspace / "up")
    text = fenced_patch_text(workspace, fenced("*** Begin File: up/evil.py\nx\n*** End File\n"))
    assert "resolves outside the workspace" in text.stderr
    assert not (tmp_path / "evil.py").exists()


# -- extraction ----------------------------------------------------------------


def test_it_extracts_tilde_fences_and_longer_backtick_fences_with_inner_fences():
    assert extract_fenced_block("~~~patch\nbody\n~~~\n").body == "body\n"
    block = extract_fenced_block("````diff\n```\ninner\n````\n")
    assert block.body == "```\ninner\n"


def test_it_treats_an_unclosed_fence_as_running_to_the_end():
    assert extract_fenced_block("```diff\n--- a/x\n+++ b/x").body == "--- a/x\n+++ b/x\n"
