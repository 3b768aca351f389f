"""The runner hook: `make_executor(pack, options)` → `prepare` / `finish` per measured execution.

Order per execution (docs/repo-tasks.md): workspace copy (prepare) → adapter
call (runner) → task phase (fenced-patch | external-agent | in-process
harness) → patch capture → verifier → row fields. Task outcomes never raise;
`RepoTaskError` (a BenchpackError) means the run must stop.

Candidate code runs only inside the run's sandbox (`sandbox.py`): the
external agent here, everything else through the verifier's launcher. Writes
to guarded paths during a phase fail the case with a recorded reason
(`guard.py`); the row says which sandbox the result was produced under.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from benchpack.errors import Problem
from benchpack.repo_task import EXTERNAL_AGENT, repo_task_problem
from benchpack.repo_task.context import build_context, write_context
from benchpack.repo_task.executors import (
    AgentSessionHarness,
    AgentSessionRequest,
    TaskPaths,
    TaskText,
    load_external_agent_argv,
    run_agent_session,
    run_external_agent,
    run_fenced_patch,
    task_paths,
)
from benchpack.repo_task.guard import (
    MAX_LISTED,
    PACK,
    RUN,
    Change,
    GuardedRoot,
    OutsideWriteGuard,
    PackRestorer,
    describe_changes,
    environment_changes,
    environment_roots,
)
from benchpack.repo_task.model_calls import summarize_model_calls
from benchpack.repo_task.patch import capture_patch
from benchpack.repo_task.relay import ModelRelay, sandbox_endpoint, wrap_agent_argv
from benchpack.repo_task.sandbox import (
    BUBBLEWRAP,
    NONE,
    SandboxError,
    SandboxPolicy,
    extra_read_only_from_env,
    make_policy,
    sandbox_command,
    sandbox_environment,
)
from benchpack.repo_task.session import WorkspaceFiles
from benchpack.repo_task.toolchains import resolve_toolchains
from benchpack.repo_task.verify import run_verifier
from benchpack.repo_task.workspace import PreparedWorkspace, prepare_workspace

RUN_METADATA_FILE = "run-metadata.json"
# One row per model request of every external-agent session, written by the measuring proxy
# (benchpack.agents.proxy, handed in by the runner as `proxy_factory`; docs/agents.md).
AGENT_TURNS_FILE = "agent-turns.jsonl"
AGENT_TIMEOUT_S = 600.0  # an agent recipe's time limit per execution unless --agent-timeout says otherwise
AGENT_PHASE, VERIFIER_PHASE = "external agent", "verifier"


def agent_environment(policy: SandboxPolicy) -> dict[str, str]:
    """Honest tools leave no build output in the workspace (scope checks count every file)."""
    return {"CARGO_TARGET_DIR": f"{policy.tmp}/cargo-target", "PYTHONPYCACHEPREFIX": f"{policy.tmp}/pycache"}


@dataclass
class Execution:
    """What `prepare` hands to `finish` for one measured execution."""

    case: object  # packs.Case
    repetition: int
    out: Path
    workspace: PreparedWorkspace
    paths: TaskPaths
    guarded: list[dict] = field(default_factory=list)  # one entry per phase that wrote to guarded paths
    infrastructure_error: str | None = None
    agent_session: dict | None = None  # the measuring proxy's figures over the agent's turns


def secret_paths(pack) -> tuple[Path, ...]:
    """What candidate code may never see: the pack's verify/ directory and every verifier's own directory."""
    paths = {(pack.root / "verify").resolve()}
    for case in pack.cases:
        if case.scoring is not None and case.scoring.mode == "verify-script" and case.scoring.script_resolved:
            paths.add(Path(case.scoring.script_resolved).resolve().parent)
    return tuple(sorted(paths))


def build_policy(pack, options, private_dir: Path | None = None) -> SandboxPolicy:
    """The run's sandbox policy; ConfigError (before anything is written) when no sandbox is available."""
    return make_policy(
        unsandboxed=bool(getattr(options, "unsandboxed", False)),
        hidden=(Path(pack.root).resolve(), Path(options.out).resolve()),
        secret=secret_paths(pack),
        extra_read_only=extra_read_only_from_env(os.environ),
        private_dir=private_dir,
    )


def agent_binds_for(argv: list[str], policy: SandboxPolicy) -> tuple[list[str], tuple[str, ...]]:
    """(argv with argv[0] made absolute if the sandbox PATH would not find it, paths to bind read-only).

    An argv item that is an existing absolute path is made visible: a file
    with its directory (siblings such as helper modules), unless that
    directory holds a secret path, then the file alone; a directory as is.
    """
    argv = list(argv)
    binds: list[str] = []
    if "/" not in argv[0] and shutil.which(argv[0], path=os.pathsep.join(policy.path_dirs)) is None:
        found = shutil.which(argv[0])
        if found:
            argv[0] = found
    secrets = [str(s) for s in policy.secret]
    for item in argv:
        if not os.path.isabs(item) or not os.path.exists(item):
            continue
        real = os.path.realpath(item)
        if any(real == s or real.startswith(s + "/") for s in secrets):
            raise SandboxError(Problem("BENCHPACK_EXTERNAL_AGENT_ARGV", "", f"{item} is inside the pack's verifier "
                                       "directory, which candidate code may never see"))  # fmt: skip
        if os.path.isdir(real):
            binds.append(real)
            continue
        parent = os.path.dirname(real)
        holds_secret = any(s == parent or s.startswith(parent.rstrip("/") + "/") for s in secrets)
        binds.append(real if holds_secret else parent)
    return argv, tuple(dict.fromkeys(binds))


class RepoTaskExecutor:
    def __init__(self, pack, options, external_agent_argv: list[str] | None = None,
                 agent_session_harness: AgentSessionHarness | None = None, grace_s: float | None = None,
                 policy: SandboxPolicy | None = None, agent_read_only: tuple[Path, ...] = (),
                 proxy_factory: Callable | None = None):  # fmt: skip
        self.pack = pack
        # proxy_factory(endpoint, turns_path, labels, timeout_s) -> a context manager with `address`,
        # `url_for(endpoint)` and `summary(time_to_solution_s)`: the measuring proxy the runner hands in
        # (benchpack.agents.proxy); this layer knows it only by that shape.
        self.proxy_factory = proxy_factory
        self.options = options
        self.agent_session_harness = agent_session_harness
        self.grace_s = grace_s
        self.pack_restorer = PackRestorer(pack.root)
        self._private = tempfile.TemporaryDirectory(prefix="benchpack-run-")
        self.policy = policy or build_policy(pack, options, Path(self._private.name))
        self.external_agent_argv, self.agent_binds = (None, ())
        if external_agent_argv:
            self.external_agent_argv, self.agent_binds = agent_binds_for(external_agent_argv, self.policy)
            # extra paths only the agent sees (the audit shows its fixture agents the pack's scripts/)
            self.agent_binds += tuple(str(Path(p).resolve()) for p in agent_read_only)
        self._poisoned: str | None = None  # set when the runner's environment was modified beyond repair
        # Toolchain facts, asked once now — before any candidate file exists — from an empty
        # directory with a pinned environment (toolchains.py); verifiers never ask a toolchain.
        self.toolchains = resolve_toolchains() if _has_verify_script(pack) else {}
        self._start_dir = Path(self._private.name) / "start"  # where host-side sandbox launches start
        self._start_dir.mkdir(exist_ok=True)

    @property
    def sandbox_mode(self) -> str:
        return self.policy.mode

    # -- hook ---------------------------------------------------------------

    def prepare(self, case, repetition: int, out: Path) -> Execution:
        if self._poisoned:
            raise repo_task_problem(case.id, self._poisoned)
        out = Path(out).resolve()
        fixture = self.pack.repo_fixture(case)
        if fixture is None:
            raise repo_task_problem(case.id, 'needs exactly one kind = "repo" directory fixture')
        workspace = prepare_workspace(fixture, out, case.id, repetition)
        return Execution(case, repetition, out, workspace, task_paths(out, case.id, repetition))

    def finish(self, execution: Execution, result) -> dict:
        case, out, ws = execution.case, execution.out, execution.workspace
        text = self._task_phase(execution, result.output_text or "")
        if text is not None and text.infrastructure_error:
            execution.infrastructure_error = text.infrastructure_error
        patch = capture_patch(ws.source_root, ws.path, out, case.id, execution.repetition)
        row = {"sandbox": self.policy.mode, "workspace": ws.record(), "patch": patch, "task": execution.paths.record(out)}
        if execution.agent_session is not None:
            row["agent_session"] = execution.agent_session
        scoring = case.scoring
        if scoring is not None and scoring.mode == "verify-script":
            verify_dir = out / "verify" / case.id
            verify_dir.mkdir(parents=True, exist_ok=True)  # ours, before the snapshot
            guard = self._guard(out, (ws.path, verify_dir))
            extra = {} if self.grace_s is None else {"grace_s": self.grace_s}
            outcome, paths = run_verifier(
                scoring, pack=self.pack, case_id=case.id, workspace=ws.path,
                source_fixture_id=ws.source_fixture_id, patch=out / patch["path"], out=out,
                repetition=execution.repetition, policy=self.policy, toolchains=self.toolchains, **extra,
            )  # fmt: skip
            _append(paths.stderr, self._after_phase(VERIFIER_PHASE, guard.changes(), execution))
            row.update(outcome.row_fields(paths, out))
        return self._record_failures(row, execution)

    def summary_sections(self, rows: list[dict], out: Path) -> list[str]:
        """Sandbox and failure reasons of the repo-task rows; model calls when any log exists."""
        sections = [self._sandbox_section(rows)] if any("sandbox" in r for r in rows) else []
        failures = self._failure_section(rows)
        if failures:
            sections.append(failures)
        logs = sorted(Path(out).glob("task/*/rep-*.model-calls.jsonl"))
        if logs:
            sections.append(_model_call_section(summarize_model_calls(logs)))
        sessions = _agent_session_section(rows)
        if sessions:
            sections.append(sessions)
        return sections

    # -- task phase ----------------------------------------------------------

    def _task_phase(self, execution: Execution, output_text: str) -> TaskText | None:
        case, ws, paths = execution.case, execution.workspace, execution.paths
        harness_id = case.harness.id if case.harness is not None else None
        timeout_s = case.harness.timeout_s if case.harness is not None else None
        if getattr(self.options, "agent", None):  # `--agent NAME`: the recipe's agent solves every case
            harness_id = EXTERNAL_AGENT
            timeout_s = getattr(self.options, "agent_timeout_s", None) or AGENT_TIMEOUT_S
        if self.agent_session_harness is not None and harness_id is None:
            request = AgentSessionRequest(case, execution.repetition, execution.out, ws.path, output_text, paths, WorkspaceFiles(ws.path))
            run_agent_session(self.agent_session_harness, request, timeout_s)
            return None
        if harness_id == EXTERNAL_AGENT:
            self._external_agent(execution, timeout_s)
            return None
        return run_fenced_patch(ws.path, output_text, paths, timeout_s)

    def _external_agent(self, execution: Execution, timeout_s: float | None) -> None:
        case, out, paths = execution.case, execution.out, execution.paths
        if not self.external_agent_argv:
            raise repo_task_problem(case.id, "external-agent harness selected but no agent argv is configured")
        argv0 = self.external_agent_argv[0]
        if os.path.isabs(argv0) and not os.access(argv0, os.X_OK):
            raise repo_task_problem(case.id, f"could not start the external agent {argv0!r}: not an executable file")
        if "/" not in argv0 and not shutil.which(argv0, path=os.pathsep.join(self.policy.path_dirs)):
            raise repo_task_problem(case.id, f"could not start the external agent {argv0!r}: not found on PATH")
        metadata = out / RUN_METADATA_FILE
        sandboxed = self.policy.mode == BUBBLEWRAP
        endpoint = self.options.endpoint
        proxy = self._proxy(execution, endpoint, timeout_s)
        with proxy if proxy is not None else _Nothing():
            if proxy is not None:  # the agent calls the proxy; the proxy calls the endpoint
                agent_endpoint = sandbox_endpoint(endpoint) if sandboxed else proxy.url_for(endpoint)
            else:
                agent_endpoint = sandbox_endpoint(endpoint) if sandboxed and endpoint else endpoint
            context = build_context(
                pack=self.pack, case=case, workspace=execution.workspace, out=out, repetition=execution.repetition,
                paths=paths, adapter_id=self.options.adapter, model=self.options.model, endpoint=agent_endpoint,
                openai_stream_usage=getattr(self.options, "openai_stream_usage", None),
                run_metadata_path=metadata if metadata.is_file() else None,
            )  # fmt: skip
            write_context(paths.context, context)
            paths.model_calls.parent.mkdir(parents=True, exist_ok=True)
            paths.model_calls.touch()  # bound read-write into the sandbox; removed again if left empty
            allowed = (execution.workspace.path, paths.stdout, paths.stderr, paths.model_calls, out / AGENT_TURNS_FILE)
            guard = self._guard(out, allowed)
            extra = {} if self.grace_s is None else {"grace_s": self.grace_s}
            target = proxy.address if proxy is not None else None
            with ModelRelay(endpoint if sandboxed and endpoint else "", target=target) as relay:
                wrap, env = self._agent_wrapper(execution, relay, metadata)
                started = time.perf_counter()
                run_external_agent(
                    self.external_agent_argv, workspace=execution.workspace.path, case_id=case.id, out=out,
                    repetition=execution.repetition, paths=paths, timeout_s=timeout_s, wrap=wrap, env=env,
                    start_dir=self._start_dir if wrap is not None else None, **extra,
                )  # fmt: skip
                elapsed = time.perf_counter() - started
        if proxy is not None:  # closed above: requests still in flight have their rows now
            execution.agent_session = proxy.summary(elapsed)
        if paths.model_calls.is_file() and paths.model_calls.stat().st_size == 0:
            paths.model_calls.unlink()
        _append(paths.stderr, self._after_phase(AGENT_PHASE, guard.changes(), execution))

    def _proxy(self, execution: Execution, endpoint: str | None, timeout_s: float | None):
        """The measuring proxy for this session, or None (no factory, or an endpoint it cannot forward: https)."""
        if self.proxy_factory is None or not endpoint or not endpoint.startswith("http://"):
            return None
        labels = {"case": execution.case.id, "repetition": execution.repetition}
        return self.proxy_factory(endpoint, execution.out / AGENT_TURNS_FILE, labels, timeout_s)

    def _agent_wrapper(self, execution: Execution, relay: ModelRelay, metadata: Path):
        """(argv → sandboxed argv, environment for Popen) for the agent phase."""
        ws, paths = execution.workspace.path, execution.paths
        if self.policy.mode == NONE:
            env = sandbox_environment(self.policy, agent_environment(self.policy))
            return None, env
        read_only = [*self.agent_binds, paths.context]
        if metadata.is_file():
            read_only.append(metadata)
        if relay.directory is not None:
            read_only.append(relay.directory)

        def wrap(command: list[str]) -> list[str]:
            inner = command
            if relay.socket_path is not None:
                inner = wrap_agent_argv(command, str(relay.socket_path), relay.address[1], sys.executable)
            return sandbox_command(self.policy, inner, cwd=ws, writable=(ws,), read_only=tuple(read_only),
                                   writable_files=(paths.model_calls,), env=agent_environment(self.policy))  # fmt: skip

        return wrap, {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}

    # -- guarded paths ---------------------------------------------------------

    def _guard(self, out: Path, allowed: tuple[Path, ...]) -> OutsideWriteGuard:
        self.pack_restorer.snapshot()
        roots = [GuardedRoot(Path(self.pack.root), PACK, hash_content=True), GuardedRoot(out, RUN)]
        if self.policy.mode == NONE:  # with bubblewrap these are read-only or not mounted at all
            roots += environment_roots()
        return OutsideWriteGuard(tuple(roots), allowed)

    def _after_phase(self, phase: str, changed: list[Change], execution: Execution) -> str:
        """Undo what can be undone, record the rest; returns the lines for the phase's stderr log."""
        if not changed:
            return ""
        note = describe_changes(phase, changed)
        restored = self.pack_restorer.restore([c.path for c in changed if c.kind == PACK])
        if restored:
            note += f"benchpack: restored {len(restored)} pack path(s) from the copy taken before the run\n"
        touched, disabled = environment_changes(changed)
        if disabled:
            note += f"benchpack: disabled {len(disabled)} startup hook(s) it planted (renamed to *.disabled-by-benchpack): {', '.join(disabled)}\n"
        if touched:
            self._poisoned = (f"the {phase} of the previous execution changed the runner's Python environment "
                              f"({', '.join(touched[:5])}); inspect and remove what it planted — later results "
                              "could not be trusted, so the run stops")  # fmt: skip
            note += f"benchpack: {self._poisoned}\n"
        execution.guarded.append({
            "phase": phase,
            "paths": [c.path for c in changed[:MAX_LISTED]],
            "count": len(changed),
        })  # fmt: skip
        return note

    # -- rows and summary --------------------------------------------------------

    def _record_failures(self, row: dict, execution: Execution) -> dict:
        reason = None
        status = None
        if execution.infrastructure_error:
            status, reason = "error", execution.infrastructure_error
        elif execution.guarded:
            first = execution.guarded[0]
            more = f" (+{first['count'] - 1} more)" if first["count"] > 1 else ""
            status, reason = "failed", f"guarded-path write: the {first['phase']} changed {first['paths'][0]}{more}"
        repo = row.get("repo_task")
        if repo is None and status is None:
            return row
        if repo is None:
            repo = row["repo_task"] = {"status": "failed", "verify_exit_code": None}
            row["scoring"] = {"mode": getattr(execution.case.scoring, "mode", "verify-script"), "passed": False}
        if status is not None:
            repo["status"] = status
            row["scoring"]["passed"] = False
        if execution.guarded:
            repo["guarded_writes"] = execution.guarded
        if repo["status"] != "passed":
            repo["failure_reason"] = reason or repo.get("failure_reason") or "the verifier did not pass"
        return row

    def _sandbox_section(self, rows: list[dict]) -> str:
        modes = sorted({r["sandbox"] for r in rows if "sandbox" in r})
        lines = ["## Sandbox", ""]
        if modes == [BUBBLEWRAP]:
            lines.append("- Candidate code ran under bubblewrap: workspace writable, pack and hidden checks not mounted, no network but the model endpoint.")
        else:
            lines.append(f"- Sandbox: {', '.join(modes)}")
        if NONE in modes:
            lines.append("- **sandbox: none** — candidate code ran without isolation (`--unsandboxed`); "
                         "these results rank below sandboxed ones.")  # fmt: skip
        return "\n".join(lines) + "\n"

    def _failure_section(self, rows: list[dict]) -> str:
        lines = []
        for row in rows:
            repo = row.get("repo_task") or {}
            if repo.get("failure_reason"):
                rep = f" rep {row['repetition']}" if "repetition" in row else ""
                lines.append(f"- `{row.get('case')}`{rep}: {repo['status']} — {repo['failure_reason']}")
        if not lines:
            return ""
        return "\n".join(["## Repo-task failures", "", *lines]) + "\n"


def _model_call_section(s: dict) -> str:
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
    return "\n".join(lines) + "\n"


def _agent_session_section(rows: list[dict]) -> str:
    """Pass/fail beside the speed of the agent's own turns, one line per measured agent session."""
    lines = []
    for row in rows:
        s = row.get("agent_session")
        if not isinstance(s, dict):
            continue
        passed = (row.get("scoring") or {}).get("passed")
        verdict = "passed" if passed else "failed" if passed is False else "unscored"
        rep = f" rep {row['repetition']}" if "repetition" in row else ""
        figures = [f"{s.get('turns')} turns ({s.get('error_turns')} errors)",
                   f"time to solution {_fmt(s.get('time_to_solution_s'), 's')}",
                   f"TTFT p50 {_fmt(s.get('ttft_p50_s'), 's')} / p90 {_fmt(s.get('ttft_p90_s'), 's')}",
                   f"decode p50 {_fmt(s.get('decode_tps_p50'), 'tok/s')} / p90 {_fmt(s.get('decode_tps_p90'), 'tok/s')}",
                   f"tokens in {s.get('prompt_tokens')} out {s.get('output_tokens')}",
                   f"prompt growth {_fmt(s.get('prompt_growth_per_turn'), 'tok/turn')}",
                   f"cache hits {_fmt(s.get('cache_hit_share'), '')}"]
        lines.append(f"- `{row.get('case')}`{rep}: **{verdict}** — " + ", ".join(figures))
    if not lines:
        return ""
    return "\n".join(["## Agent sessions", "", f"Per-request rows: `{AGENT_TURNS_FILE}`.", "", *lines]) + "\n"


def _fmt(value, unit: str) -> str:
    if value is None:
        return "—"
    return f"{value:.4g} {unit}".rstrip()


def _append(path: Path, text: str) -> None:
    if text:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(text)


def _has_verify_script(pack) -> bool:
    return any(c.scoring is not None and c.scoring.mode == "verify-script" for c in pack.cases)


class _Nothing:
    def __enter__(self):
        return None

    def __exit__(self, *exc) -> None:
        return None


def make_executor(pack, options, proxy_factory: Callable | None = None) -> RepoTaskExecutor:
    """Runner entry point; raises ConfigError before the output directory exists.

    `proxy_factory` (the runner passes benchpack.agents.proxy.proxy_factory) puts the measuring proxy
    between every external agent and the endpoint."""
    argv = getattr(options, "external_agent_argv", None)
    if argv is None:
        argv = load_external_agent_argv(os.environ, pack)
    return RepoTaskExecutor(pack, options, external_agent_argv=argv, proxy_factory=proxy_factory)
