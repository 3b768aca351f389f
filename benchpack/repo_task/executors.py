"""Task executors: what happens to the workspace between the adapter call and patch capture.

* `run_fenced_patch` — the default/public `fenced-patch` executor: applies the
  first fenced `diff`/`patch` block of the model output with real `git apply`.
* `run_external_agent` — the public `external-agent` executor: a runner-owned
  argv (`BENCHPACK_EXTERNAL_AGENT_ARGV`) run without a shell in the workspace.
* `run_agent_session` — the internal in-process harness path (D-022), for
  runner-side callers and tests; it gets `WorkspaceFiles` helpers only.

Every executor writes `task/<case>/rep-NNN.{stdout,stderr}.log`. Bad model
output is a task outcome (workspace unchanged, one deterministic stderr
message); `RepoTaskError` is reserved for states the run cannot trust.
"""

from __future__ import annotations

import json
import os
import posixpath
import re
import shutil
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from benchpack.errors import ConfigError, Problem
from benchpack.repo_task import RepoTaskError, rep_stem, repo_task_problem
from benchpack.repo_task.fenced import (
    ReplacementError,
    diff_paths,
    diff_symlink_targets,
    extract_fenced_block,
    is_replacement,
    parse_replacement,
)
from benchpack.repo_task.processes import run_bounded, run_captured
from benchpack.repo_task.session import UnsafeWorkspacePath, WorkspaceFiles, unsafe_path_reason

EXTERNAL_AGENT_ENV = "BENCHPACK_EXTERNAL_AGENT_ARGV"
MAX_PATCH_BLOCK_BYTES = 4 * 1024 * 1024
UNCHANGED = "; workspace left unchanged.\n"


@dataclass(frozen=True)
class TaskPaths:
    stdout: Path
    stderr: Path
    context: Path
    model_calls: Path

    def record(self, out: Path) -> dict:
        """The `task` object of a measured run.jsonl row (run-relative paths)."""
        return {
            "stdout_path": self.stdout.relative_to(out).as_posix(),
            "stderr_path": self.stderr.relative_to(out).as_posix(),
        }


def task_paths(out: Path, case_id: str, repetition: int) -> TaskPaths:
    base = Path(out).resolve() / "task" / case_id
    stem = rep_stem(repetition)
    return TaskPaths(
        stdout=base / f"{stem}.stdout.log",
        stderr=base / f"{stem}.stderr.log",
        context=base / f"{stem}.context.json",
        model_calls=base / f"{stem}.model-calls.jsonl",
    )


def write_task_logs(paths: TaskPaths, stdout: str, stderr: str) -> None:
    paths.stdout.parent.mkdir(parents=True, exist_ok=True)
    paths.stdout.write_text(stdout, encoding="utf-8")
    paths.stderr.write_text(stderr, encoding="utf-8")


# -- fenced-patch -----------------------------------------------------------


def git_environment(workspace: Path) -> dict[str, str]:
    """An environment in which `git apply` treats the workspace as a plain directory.

    GIT_* variables from the caller (GIT_DIR, GIT_WORK_TREE, …) are dropped;
    repository discovery stops at the workspace so an enclosing repository
    (a result directory inside a checkout) is never used; user/system config
    cannot change whitespace or path handling.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env["GIT_CEILING_DIRECTORIES"] = str(Path(workspace).resolve().parent)
    env["GIT_CONFIG_NOSYSTEM"] = "1"
    env["GIT_CONFIG_GLOBAL"] = os.devnull
    env["LC_ALL"] = "C"  # deterministic git messages in task logs
    return env


@dataclass(frozen=True)
class TaskText:
    stdout: str
    stderr: str
    infrastructure_error: str | None = None  # the runner's tooling failed, not the model (e.g. no git)


def _refuse(message: str) -> TaskText:
    return TaskText("", message + UNCHANGED)


def _unsafe_diff_reason(files: WorkspaceFiles, body: str, info: str) -> str | None:
    paths = diff_paths(body)
    if not paths:
        return f"Fenced {info} block has no file headers (not a unified diff or '*** Begin File:' block)"
    for entry in paths:
        for candidate in dict.fromkeys((entry.raw, entry.path)):
            reason = unsafe_path_reason(candidate)
            if reason:
                return f"Unsafe patch path {entry.raw!r}: {reason}"
        try:
            files.resolve(entry.path)
        except UnsafeWorkspacePath as exc:
            return f"Unsafe patch path {entry.raw!r}: {exc.reason}"
    links = frozenset(p.path for p in paths if (files.root / p.path).is_symlink())
    binary_link = _binary_symlink_section(body, links)
    if binary_link:
        # A GIT binary patch carries the link target as compressed data that this check cannot
        # read as text; a symlink has no reason to be binary, so the whole patch is refused.
        return f"Unsafe symlink {binary_link!r}: written by a binary patch (a link target must be a text diff)"
    for path, target in diff_symlink_targets(body, links):
        lexical = posixpath.normpath(posixpath.join(posixpath.dirname(path), target))
        escapes = target.startswith("/") or lexical == ".." or lexical.startswith("../")
        if not escapes and lexical != ".":
            try:
                files.resolve(lexical)
            except UnsafeWorkspacePath as exc:
                escapes = "outside" in exc.reason
        if escapes:
            return f"Unsafe symlink {path!r} -> {target!r}: target points outside the workspace"
    return None


def _binary_symlink_section(body: str, existing_links: frozenset[str]) -> str | None:
    """The path of the first diff section that writes a symlink (mode 120000, or a path that is a
    link now) with binary data ("GIT binary patch" / "Binary files"), else None."""
    for section in re.split(r"(?m)^(?=diff --git )", body):
        if not section.startswith("diff --git "):
            continue
        header = section.split("\n", 1)[0]
        names = re.findall(r"(?:^| )[ab]/(\S+)", header)
        is_link = bool(re.search(r"(?m)^(?:new file mode|new mode|index \S+) ?(?:\S+ )?120000\s*$", section)) or any(
            n in existing_links for n in names
        )
        if is_link and re.search(r"(?m)^(?:GIT binary patch|Binary files )", section):
            return names[-1] if names else header
    return None


def escaping_symlinks(workspace: Path) -> list[str]:
    """Every symlink under `workspace` whose target leaves it: absolute, lexically through `..`,
    or once the whole chain is resolved (`a -> sub/b/..` with `sub/b -> ..` looks inside
    lexically but lands outside; each link is judged by where its chain finally points)."""
    root = Path(workspace).resolve()
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            if path.is_symlink():
                target = os.readlink(path)
                lexical = posixpath.normpath(posixpath.join(posixpath.dirname(path.relative_to(root).as_posix()), target))
                final = Path(os.path.realpath(path))  # follows every hop (a loop or dangling tail stays textual)
                if (target.startswith("/") or lexical == ".." or lexical.startswith("../")
                        or (final != root and not final.is_relative_to(root))):  # fmt: skip
                    found.append(path.relative_to(root).as_posix())
    return sorted(found)


def _git_apply(workspace: Path, body: str, args: list[str], timeout_s: float | None):
    argv = ["git", "apply", "--whitespace=nowarn", *args]
    return run_captured(argv, cwd=workspace, timeout_s=timeout_s, env=git_environment(workspace), input_bytes=body.encode("utf-8"))


def apply_unified_diff(workspace: Path, body: str, timeout_s: float | None, info: str = "diff") -> TaskText:
    files = WorkspaceFiles(workspace)
    reason = _unsafe_diff_reason(files, body, info)
    if reason:
        return _refuse(reason)
    failures: list[str] = []
    links_before = set(escaping_symlinks(workspace))
    # A patch that writes links may end in a chain that leaves the workspace (judged only after
    # apply, `escaping_symlinks`): keep a copy so the whole patch can be undone, as the refusal says.
    backup = tempfile.TemporaryDirectory(prefix="benchpack-apply-") if re.search(r"(?m)\b120000\b", body) else None
    if backup is not None:
        shutil.copytree(workspace, Path(backup.name) / "ws", symlinks=True)
    try:
        return _apply_with_git(workspace, body, timeout_s, info, failures, links_before, backup)
    finally:
        if backup is not None:
            backup.cleanup()


def _restore(workspace: Path, copy: Path) -> None:
    for entry in list(Path(workspace).iterdir()):
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()
    for entry in copy.iterdir():
        target = Path(workspace) / entry.name
        if entry.is_dir() and not entry.is_symlink():
            shutil.copytree(entry, target, symlinks=True)
        else:
            shutil.copy2(entry, target, follow_symlinks=False)


def _apply_with_git(workspace: Path, body: str, timeout_s: float | None, info: str, failures: list[str],
                    links_before: set[str], backup) -> TaskText:  # fmt: skip
    for mode_args in (["--recount"], []):
        try:
            check, _, err = _git_apply(workspace, body, ["--check", *mode_args], timeout_s)
        except OSError as exc:
            why = "git is not on PATH" if isinstance(exc, FileNotFoundError) else f"git could not be run: {exc.strerror or exc}"
            return TaskText("", f"{why}: cannot apply the fenced diff{UNCHANGED}", f"{why}: the fenced diff could not be applied")
        command = " ".join(["git apply --check", *mode_args])
        if check.timed_out:
            return _refuse(f"{command} timed out after {timeout_s:g} seconds")
        if check.returncode == 0:
            applied, _, err = _git_apply(workspace, body, mode_args, timeout_s)
            if applied.timed_out or applied.returncode != 0:
                # Preflight passed, so the workspace may now be half-patched.
                what = f"timed out after {timeout_s:g} seconds" if applied.timed_out else f"failed: {err.decode('utf-8', 'replace').strip()}"
                raise RepoTaskError(Problem("fenced-patch", "git apply", f"{what} after a successful preflight; workspace may be partially changed"))
            touched = sorted({p.path for p in diff_paths(body)})
            escaped = sorted(set(escaping_symlinks(workspace)) - links_before)
            if escaped:  # whatever the preflight missed: the links are removed, never followed
                for rel in escaped:
                    (Path(workspace) / rel).unlink(missing_ok=True)
                if backup is not None:  # and the rest of the patch is undone
                    _restore(workspace, Path(backup.name) / "ws")
                return _refuse(f"Unsafe symlink {escaped[0]!r}: target points outside the workspace; removed")
            return TaskText(f"Applied fenced {info} block with git apply{' --recount' if mode_args else ''}: {', '.join(touched)}\n", "")
        failures.append(f"{command}:\n{err.decode('utf-8', 'replace').rstrip()}\n")
    return TaskText("", "Patch does not apply cleanly" + UNCHANGED + "".join(failures))


def apply_replacement(workspace: Path, body: str, info: str = "patch") -> TaskText:
    try:
        replacement = parse_replacement(body)
    except ReplacementError as exc:
        return _refuse(f"Invalid '*** Begin File:' block: {exc}")
    files = WorkspaceFiles(workspace)
    try:
        target = files.resolve(replacement.path)
    except UnsafeWorkspacePath as exc:
        return _refuse(f"Unsafe replacement path {replacement.path!r}: {exc.reason}")
    if target.is_dir():
        return _refuse(f"Replacement path {replacement.path!r} is a directory")
    try:
        files.write_text(replacement.path, replacement.content)
    except (OSError, UnsafeWorkspacePath) as exc:
        return _refuse(f"Could not write replacement file {replacement.path!r}: {getattr(exc, 'strerror', None) or exc}")
    return TaskText(f"Wrote replacement file {replacement.path} from fenced {info} block\n", "")


def fenced_patch_text(workspace: Path, model_output: str, timeout_s: float | None = None) -> TaskText:
    """Apply the model's first fenced diff/patch block; never raises for bad model output."""
    block = extract_fenced_block(model_output)
    if block is None:
        return _refuse("No fenced diff or patch block found in model output")
    size = len(block.body.encode("utf-8"))
    if size > MAX_PATCH_BLOCK_BYTES:
        return _refuse(f"Fenced {block.info} block is too large ({size} bytes, limit {MAX_PATCH_BLOCK_BYTES})")
    if not block.body.strip():
        return _refuse(f"Fenced {block.info} block is empty")
    if is_replacement(block.body):
        return apply_replacement(workspace, block.body, block.info)
    return apply_unified_diff(workspace, block.body, timeout_s, block.info)


def run_fenced_patch(workspace: Path, model_output: str, paths: TaskPaths, timeout_s: float | None = None) -> TaskText:
    text = fenced_patch_text(workspace, model_output, timeout_s)
    write_task_logs(paths, text.stdout, text.stderr)
    return text


# -- external-agent -----------------------------------------------------------


def _argv_problem(reason: str) -> ConfigError:
    return ConfigError(Problem(EXTERNAL_AGENT_ENV, "", reason))


def load_external_agent_argv(env: Mapping[str, str], pack) -> list[str] | None:
    """The validated agent argv when `pack` has an external-agent case, else None.

    Called before the output directory exists, so configuration mistakes cost
    nothing. Raises ConfigError naming the variable.
    """
    users = [c.id for c in pack.cases if c.harness is not None and c.harness.id == "external-agent"]
    if not users:
        return None
    example = 'e.g. ["python3", "/path/to/agent.py"]'
    raw = env.get(EXTERNAL_AGENT_ENV)
    if raw is None or not raw.strip():
        raise _argv_problem(f"must be set to a JSON array of strings for external-agent case(s) {', '.join(users)} ({example})")
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        raise _argv_problem(f"must be a JSON array of non-empty strings, not a plain command string ({example})") from None
    if not isinstance(value, list):
        raise _argv_problem(f"must be a JSON array of non-empty strings, got a JSON {type(value).__name__} ({example})")
    if not value:
        raise _argv_problem("must not be an empty array")
    problems = []
    for index, item in enumerate(value):
        if not isinstance(item, str):
            problems.append(Problem(EXTERNAL_AGENT_ENV, f"[{index}]", f"must be a string, got {type(item).__name__}"))
        elif item == "":
            problems.append(Problem(EXTERNAL_AGENT_ENV, f"[{index}]", "must not be empty"))
        elif "\0" in item:
            problems.append(Problem(EXTERNAL_AGENT_ENV, f"[{index}]", "must not contain NUL bytes"))
    if problems:
        raise ConfigError(problems)
    return value


@dataclass(frozen=True)
class ExternalAgentOutcome:
    returncode: int | None
    timed_out: bool


def external_agent_command(argv: list[str], *, workspace: Path, case_id: str, out: Path, repetition: int, context: Path) -> list[str]:
    return [
        *argv,
        "--workspace", str(Path(workspace).resolve()),
        "--case", case_id,
        "--output-dir", str(Path(out).resolve()),
        "--repetition", str(repetition),
        "--context", str(Path(context).resolve()),
    ]  # fmt: skip


def run_external_agent(
    argv: list[str],
    *,
    workspace: Path,
    case_id: str,
    out: Path,
    repetition: int,
    paths: TaskPaths,
    timeout_s: float | None,
    grace_s: float | None = None,
    wrap: Callable[[list[str]], list[str]] | None = None,
    env: dict[str, str] | None = None,
    start_dir: Path | None = None,
) -> ExternalAgentOutcome:
    """Run the agent in the workspace; its stdout/stderr become the task logs.

    `wrap` turns the full agent command into the sandboxed one; `env` is the
    environment of the process started (the sandbox clears it again inside);
    `start_dir` is where that host-side process starts (the sandbox changes
    into the workspace itself), so no host program starts in a directory the
    candidate writes.
    """
    command = external_agent_command(argv, workspace=workspace, case_id=case_id, out=out, repetition=repetition, context=paths.context)
    if wrap is not None:
        command = wrap(command)
    extra = {} if grace_s is None else {"grace_s": grace_s}
    try:
        result = run_bounded(command, cwd=Path(start_dir or workspace), stdout_path=paths.stdout, stderr_path=paths.stderr,
                             timeout_s=timeout_s, env=env, **extra)  # fmt: skip
    except OSError as exc:
        raise repo_task_problem(case_id, f"could not start the external agent {argv[0]!r}: {exc.strerror or exc}") from exc
    with open(paths.stderr, "a", encoding="utf-8") as err:
        if result.timed_out:
            err.write(f"\nbenchpack: external agent timed out after {timeout_s:g} seconds; process group stopped.\n")
        elif result.returncode != 0:
            err.write(f"\nbenchpack: external agent exited with status {result.returncode}.\n")
    return ExternalAgentOutcome(result.returncode, result.timed_out)


# -- internal agent-session harness (D-022) -----------------------------------------


@dataclass(frozen=True)
class AgentSessionRequest:
    case: object  # packs.Case
    repetition: int
    out: Path
    workspace: Path
    model_output: str
    paths: TaskPaths
    files: WorkspaceFiles


@dataclass(frozen=True)
class AgentSessionResult:
    stdout: str = ""
    stderr: str = ""


AgentSessionHarness = Callable[[AgentSessionRequest], AgentSessionResult]


def run_agent_session(harness: AgentSessionHarness, request: AgentSessionRequest, timeout_s: float | None = None) -> AgentSessionResult:
    """Run an in-process harness; its returned text becomes the task logs.

    In-process callables cannot be pre-empted safely, so a task timeout is a
    configuration error here rather than a promise we cannot keep. Unsafe
    helper paths and helper OSErrors propagate (runner failure, before logs).
    """
    if timeout_s is not None:
        raise RepoTaskError(Problem("agent-session", "timeout_s", "task timeouts cannot be combined with an in-process harness"))
    result = harness(request)
    if not isinstance(result, AgentSessionResult) or not isinstance(result.stdout, str) or not isinstance(result.stderr, str):
        raise RepoTaskError(Problem("agent-session", "", "harness must return AgentSessionResult(stdout: str, stderr: str)"))
    write_task_logs(request.paths, result.stdout, result.stderr)
    return result
