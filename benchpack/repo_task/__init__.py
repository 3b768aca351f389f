"""Repo-task execution: disposable workspaces, task executors, patch capture, verifiers.

The runner calls `integration.RepoTaskExecution` (prepare before the adapter
call, finish after it); everything else in this package is a building block
that can be used and tested on its own. See docs/repo-tasks.md.
"""

from __future__ import annotations

from benchpack.errors import BenchpackError, Problem


class RepoTaskError(BenchpackError):
    """A runner failure while executing a repo-task (not a task outcome).

    Task outcomes (no patch, unapplicable patch, agent timeout, failing
    verifier) are recorded in logs and rows; this error is for situations
    where the run cannot be trusted to continue, e.g. a workspace that already
    exists or a patch application that timed out half-way.
    """


def repo_task_problem(case_id: str, reason: str) -> RepoTaskError:
    return RepoTaskError(Problem(f"repo-task {case_id}", "", reason))


def rep_stem(repetition: int) -> str:
    """`rep-NNN` for a 1-based measured repetition (rep-001 even for one repetition)."""
    if isinstance(repetition, bool) or not isinstance(repetition, int) or repetition < 1:
        raise ValueError(f"repetition must be an integer >= 1, got {repetition!r}")
    return f"rep-{repetition:03d}"


EXTERNAL_AGENT = "external-agent"


def solved_by_external_agent(case, options) -> bool:
    """Whether an external agent's session solves this repo-task case: `--agent NAME` (every repo-task case)
    or the case's own `harness = { id = "external-agent" }`. The runner's own answer is then not used."""
    if getattr(case, "kind", None) != "repo-task":
        return False
    harness = getattr(case, "harness", None)
    return bool(getattr(options, "agent", None)) or (harness is not None and harness.id == EXTERNAL_AGENT)


def make_executor(pack, options, proxy_factory=None):
    """The runner's repo-task hook (see integration.py); imported lazily to keep this module a leaf."""
    from benchpack.repo_task.integration import make_executor as _make_executor

    return _make_executor(pack, options, proxy_factory=proxy_factory)
