"""Helpers for the repo-task tests: real packs on disk, a hash of a whole tree.

No tests live here; the repo-task test modules import it.
"""

from __future__ import annotations

import hashlib
import os
import textwrap
from pathlib import Path

from benchpack.adapters.base import AdapterResult
from benchpack.packs.loader import Pack, load_pack
from benchpack.run.runner import RunOptions

PASSING_VERIFIER = "raise SystemExit(0)\n"


def tree_hash(root: Path) -> str:
    """Content, names, symlink targets and exec bits of every entry below `root`."""
    digest = hashlib.sha256()
    for dirpath, dirnames, filenames in sorted(os.walk(root, followlinks=False)):
        dirnames.sort()
        for name in sorted(dirnames + filenames):
            path = Path(dirpath) / name
            digest.update(str(path.relative_to(root)).encode() + b"\0")
            if path.is_symlink():
                digest.update(b"L" + os.readlink(path).encode())
            elif path.is_file():
                digest.update(b"F" + bytes([os.access(path, os.X_OK)]) + path.read_bytes())
            else:
                digest.update(b"D")
    return digest.hexdigest()


def write_repo_pack(
    tmp_path: Path,
    files: dict[str, str | bytes] | None = None,
    *,
    harness: str | None = None,
    verifier: str | None = PASSING_VERIFIER,
    scoring_extra: str = "",
    repetitions: int = 1,
    case_id: str = "fix",
) -> Pack:
    """A pack with one repo-task case over `fixtures/repo` built from `files`."""
    root = tmp_path / "pack"
    repo = root / "fixtures" / "repo"
    repo.mkdir(parents=True)
    for rel, content in (files or {"app.py": "def greet():\n    return 'helo'\n"}).items():
        path = repo / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    scoring = ""
    if verifier is not None:
        (root / "verify").mkdir()
        (root / "verify" / "check.py").write_text(textwrap.dedent(verifier), encoding="utf-8")
        scoring = f'scoring = {{ mode = "verify-script", script = "verify/check.py"{scoring_extra} }}'
    harness_line = f"harness = {harness}" if harness else ""
    (root / "benchpack.toml").write_text(
        textwrap.dedent(
            f"""\
            [pack]
            id = "repo-pack"
            version = "0.1.0"
            description = "Repo-task test pack"

            [defaults]
            temperature = 0
            max_tokens = 64
            repetitions = {repetitions}

            [[cases]]
            id = "{case_id}"
            kind = "repo-task"
            prompt = "Fix the greeting."
            fixture_refs = ["repo"]
            """
        )
        + f"{harness_line}\n{scoring}\n"
        + textwrap.dedent(
            """
            [[fixtures]]
            id = "repo"
            kind = "repo"
            path = "fixtures/repo"
            description = "The repository"
            """
        ),
        encoding="utf-8",
    )
    return load_pack(root)


def adapter_result(text: str, ok: bool = True) -> AdapterResult:
    return AdapterResult(ok, None if ok else "boom", text, "", {}, {}, None, {}, None)


def run_options(tmp_path: Path, **overrides) -> RunOptions:
    values = dict(adapter="openai-chat", model="test-model", endpoint="http://127.0.0.1:9/v1",
                  out=tmp_path / "out", host_label="test-host", run_metadata=None)
    values.update(overrides)
    return RunOptions(**values)


def fenced(body: str, info: str = "diff") -> str:
    return f"Here is the fix.\n\n```{info}\n{textwrap.dedent(body).lstrip()}```\n"


GREETING_FIX = """\
--- a/app.py
+++ b/app.py
@@ -1,2 +1,2 @@
 def greet():
-    return 'helo'
+    return 'hello'
"""
