"""The runner hook: `make_executor(pack, options)` → `prepare` / `finish` per measured execution.

Order per execution (docs/repo-tasks.md): workspace copy (prepare) → adapter
call (runner) → task phase (fenced-patch | external-agent | in-process
harness) → patch capture → verifier → row fields. Task outcomes never raise;
`RepoTaskError` (a BenchpackError) means the run must stop.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from benchpack.repo_task import repo_task_problem
from benchpack.repo_task.context import build_context, write_context
from benchpack.repo_task.executors import (
    AgentSessionHarness,
    AgentSessionRequest,
    TaskPaths,
    load_external_agent_argv,
    run_agent_session,
    run_external_agent,
    run_fenced_patch,
    task_paths,
)
from benchpack.repo_task.guard import OutsideWriteGuard, PackRestorer, describe_changes
from benchpack.repo_task.model_calls import summarize_model_calls
from benchpack.repo_task.patch import capture_patch
from benchpack.repo_task.session import WorkspaceFiles
from benchpack.repo_task.verify import run_verifier
from benchpack.repo_task.workspace import PreparedWorkspace, prepare_workspace

RUN_METADATA_FILE = "run-metadata.json"


@dataclass
class Execution:
    """What `prepare` hands to `finish` for one measured execution."""

    case: object  # packs.Case
    repetition: int
    out: Path
    workspace: PreparedWorkspace
    paths: TaskPaths


class RepoTaskExecutor:
    def __init__(self, pack, options, external_agent_argv: list[str] | None = None,
                 agent_session_harness: AgentSessionHarness | None = None, grace_s: float | None = None):  # fmt: skip
        self.pack = pack
        self.options = options
        self.external_agent_argv = external_agent_argv
        self.agent_session_harness = agent_session_harness
        self.grace_s = grace_s
        self.pack_restorer = PackRestorer(pack.root)

    # -- hook ---------------------------------------------------------------

    def prepare(self, case, repetition: int, out: Path) -> Execution:
        out = Path(out).resolve()
        fixture = self.pack.repo_fixture(case)
        if fixture is None:
            raise repo_task_problem(case.id, 'needs exactly one kind = "repo" directory fixture')
        workspace = prepare_workspace(fixture, out, case.id, repetition)
        return Execution(case, repetition, out, workspace, task_paths(out, case.id, repetition))

    def finish(self, execution: Execution, result) -> dict:
        case, out, ws = execution.case, execution.out, execution.workspace
        self._task_phase(execution, result.output_text or "")
        patch = capture_patch(ws.source_root, ws.path, out, case.id, execution.repetition)
        row = {"workspace": ws.record(), "patch": patch, "task": execution.paths.record(out)}
        scoring = case.scoring
        if scoring is not None and scoring.mode == "verify-script":
            (out / "verify" / case.id).mkdir(parents=True, exist_ok=True)  # ours, before the snapshot
            self.pack_restorer.snapshot()
            guard = OutsideWriteGuard((self.pack.root, out), (ws.path, out / "verify" / case.id))
            extra = {} if self.grace_s is None else {"grace_s": self.grace_s}
            outcome, paths = run_verifier(
                scoring, pack=self.pack, case_id=case.id, workspace=ws.path,
                source_fixture_id=ws.source_fixture_id, patch=out / patch["path"], out=out,
                repetition=execution.repetition, **extra,
            )  # fmt: skip
            _append(paths.stderr, self._report_and_restore("verifier", guard.changes()))
            row.update(outcome.row_fields(paths, out))
        return row

    def summary_sections(self, rows: list[dict], out: Path) -> list[str]:
        """A `## External-agent model calls` block when any model-call log exists."""
        logs = sorted(Path(out).glob("task/*/rep-*.model-calls.jsonl"))
        if not logs:
            return []
        s = summarize_model_calls(logs)
        lines = [
            "## External-agent model calls",
            "",
            f"- Logs: {s['files']}; lines: {s['calls']} ({s['valid']} valid, {s['invalid']} invalid or unsafe, not shown)",
            f"- Calls: {s['ok']} ok, {s['failed']} failed, {s['errors']} with an error",
        ]
        for key, label in (("models", "Models"), ("adapters", "Adapters"), ("endpoints", "Endpoints"),
                           ("response_formats", "Response formats"), ("token_budget_fields", "Token budget fields"),
                           ("finish_reasons", "Finish reasons")):  # fmt: skip
            if s[key]:
                lines.append(f"- {label}: {', '.join(s[key])}")
        if s["duration_s"] is not None:
            lines.append(f"- Duration: {s['duration_s']} s")
        tokens = [f"{k.replace('_tokens', '').replace('_', ' ')} {s[k]}" for k in ("prompt_tokens", "output_tokens", "cached_prompt_tokens") if s[k] is not None]
        if tokens:
            lines.append(f"- Tokens: {', '.join(tokens)}")
        return ["\n".join(lines) + "\n"]

    # -- task phase ----------------------------------------------------------

    def _task_phase(self, execution: Execution, output_text: str) -> None:
        case, ws, paths = execution.case, execution.workspace, execution.paths
        harness_id = case.harness.id if case.harness is not None else None
        timeout_s = case.harness.timeout_s if case.harness is not None else None
        if self.agent_session_harness is not None and harness_id is None:
            request = AgentSessionRequest(case, execution.repetition, execution.out, ws.path, output_text, paths, WorkspaceFiles(ws.path))
            run_agent_session(self.agent_session_harness, request, timeout_s)
        elif harness_id == "external-agent":
            self._external_agent(execution, timeout_s)
        else:
            run_fenced_patch(ws.path, output_text, paths, timeout_s)

    def _external_agent(self, execution: Execution, timeout_s: float | None) -> None:
        case, out, paths = execution.case, execution.out, execution.paths
        if not self.external_agent_argv:
            raise repo_task_problem(case.id, "external-agent harness selected but no agent argv is configured")
        metadata = out / RUN_METADATA_FILE
        context = build_context(
            pack=self.pack, case=case, workspace=execution.workspace, out=out, repetition=execution.repetition,
            paths=paths, adapter_id=self.options.adapter, model=self.options.model, endpoint=self.options.endpoint,
            openai_stream_usage=getattr(self.options, "openai_stream_usage", None),
            run_metadata_path=metadata if metadata.is_file() else None,
        )  # fmt: skip
        write_context(paths.context, context)
        allowed = (execution.workspace.path, paths.stdout, paths.stderr, paths.model_calls)
        self.pack_restorer.snapshot()
        guard = OutsideWriteGuard((self.pack.root, out), allowed)
        extra = {} if self.grace_s is None else {"grace_s": self.grace_s}
        run_external_agent(
            self.external_agent_argv, workspace=execution.workspace.path, case_id=case.id, out=out,
            repetition=execution.repetition, paths=paths, timeout_s=timeout_s, **extra,
        )  # fmt: skip
        _append(paths.stderr, self._report_and_restore("external agent", guard.changes()))

    def _report_and_restore(self, phase: str, changed: list[str]) -> str:
        restored = self.pack_restorer.restore(changed)
        note = describe_changes(phase, changed)
        if restored:
            note += f"benchpack: restored {len(restored)} pack path(s) from the copy taken before the run\n"
        return note


def _append(path: Path, text: str) -> None:
    if text:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(text)


def make_executor(pack, options) -> RepoTaskExecutor:
    """Runner entry point; raises ConfigError before the output directory exists."""
    argv = getattr(options, "external_agent_argv", None)
    if argv is None:
        argv = load_external_agent_argv(os.environ, pack)
    return RepoTaskExecutor(pack, options, external_agent_argv=argv)
