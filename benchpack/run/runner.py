"""One run of a pack against one endpoint: output dir, warmups, repetitions, rows.

Order matters for trust in the results:
1. every check that can fail on bad input (scoring modes, adapter id,
   options, run metadata, repo-task configuration, the output directory)
   runs before the output directory is created or any request is sent;
2. each measured row is appended to run.jsonl and handed to the OS before
   the next execution starts, so Ctrl-C or a crash leaves the rows done so
   far; they are fsync'ed in batches (at most 0.5 s apart) and when the run
   ends, however it ends (results.rows.RowLog);
3. summary.md is written from the rows on disk at the end, also after an
   interruption.

An endpoint that fails (refused, HTTP error, dies mid-stream) gives an
`ok: false` row and the run goes on with the next execution.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Protocol
from urllib.parse import urlsplit

# msgspec.Struct, not @dataclass: a dataclass compiles its generated methods from source text in every
# process (~0.4 ms a class); a Struct is built in C (docs/measurement.md, "Issue 34 item 2: stop 43").
import msgspec

from benchpack import repo_task

from benchpack.packs import prompt_cache

from benchpack.run import scoring

from benchpack.run import server_info
# benchpack.agents.proxy (the measuring proxy) is imported where a repo-task run makes its executor: a
# run without repo-task cases never starts it.
from benchpack.adapters import TOOL_ADAPTER_IDS, get_adapter
from benchpack.adapters.base import AdapterRequest, AdapterResult
from benchpack.errors import BenchpackError, ConfigError, Problem
from benchpack.run.hardware import collect_hardware, write_hardware
from benchpack.lanes import runs as lane_runs
from benchpack.measurement import sched
from benchpack.measurement.energy import EnergyMeter
from benchpack.run.progress import NullProgress, ProgressSink
from benchpack.results.resultdir import RUN_FILE, read_rows
from benchpack.results.rows import RowLog, build_row, write_summary
from benchpack.run.metadata import (
    RunRecord,
    finish_run_metadata,
    start_run_metadata,
    validate_run_metadata,
    write_run_metadata,
)

if TYPE_CHECKING:
    import httpx

    from benchpack.adapters.base import Adapter
    from benchpack.packs.loader import Case, Pack

perf_counter = time.perf_counter

OPENAI_STREAM_USAGE = ("include", "omit")
REPO_TASK = "repo-task"


class RunOptions(msgspec.Struct):
    adapter: str
    model: str
    endpoint: str
    out: Path
    host_label: str | None = None
    run_metadata: dict | None = None
    openai_stream_usage: str = "include"
    force: bool = False
    # Seam for the repo-task executor factory; None means it reads
    # BENCHPACK_EXTERNAL_AGENT_ARGV itself when a pack needs it.
    external_agent_argv: list[str] | None = None
    # Run repo-task candidate code without a sandbox (rows then say sandbox: none).
    unsandboxed: bool = False
    # `--agent NAME`: a built-in agent recipe (benchpack.agents.recipes) solves every repo-task case as an
    # external agent, whatever harness the case names; `external_agent_argv` is then the recipe's.
    agent: str | None = None
    # `--agent-timeout`: the agent's time limit per execution (default 600 s under --agent).
    agent_timeout_s: float | None = None
    # `--repetitions N`: measured executions per case instead of the pack's
    # default (recorded in every row's `run_plan`).
    repetitions: int | None = None
    # `--prompt-cache`: "cold" / "server-default" instead of the pack's.
    prompt_cache: str | None = None
    # Ask the server what it is (runtime, configuration, models) before and
    # after the run; False for tests and callers that know there is no server.
    probe_server: bool = True
    # `--lanes`: which of base, depth, concurrency, rate to run; None: the base
    # cases and every lane the pack declares (what `benchpack run` does by
    # default). Callers of the API get the base cases only unless they ask:
    # a runner host, the reproduction flow and publishing group rows by case
    # and do not know lanes yet (docs/lanes.md).
    lanes: tuple[str, ...] | None = ("base",)
    # `--max-depth`: skip depth-lane depths above this many tokens.
    max_depth: int | None = None


class RunOutcome(msgspec.Struct):
    out: Path
    rows: list[dict] = msgspec.field(default_factory=list)
    all_ok: bool = True
    interrupted: bool = False
    # Set when the run stopped early because it could not be trusted to go on
    # (a repo-task runner failure); the last row carries the same message.
    aborted: str | None = None
    planned_rows: int = 0
    complete: bool = True
    incomplete_reason: str | None = None
    # Things a reader must know (a model other than the one asked for, a
    # configuration the run-metadata file contradicts), also in run-metadata.json.
    warnings: list[str] = msgspec.field(default_factory=list)
    server: server_info.ServerInfo = msgspec.field(default_factory=server_info.ServerInfo)
    # Whether `rows` are run.jsonl's as read back from disk when the run ended (read_rows), not the
    # rows kept in memory: then a reader of the directory needs not parse the file again.
    rows_from_disk: bool = False


class RepoTaskExecutor(Protocol):
    """What the runner needs from `benchpack.repo_task` for `kind = "repo-task"` cases.

    `prepare` runs before the adapter call (workspace copy); `finish` runs after
    it (task phase, patch capture, verifier) and returns extra row fields:
    `workspace`, `patch`, `task`, `verify`, `repo_task` and optionally
    `scoring`, which replaces the output-text score. Raising BenchpackError
    from either stops the run (recorded as a failed row).
    """

    def prepare(self, case: Case, repetition: int, out: Path) -> Any: ...
    def finish(self, context: Any, result: AdapterResult) -> dict: ...


# --- checks before anything is written ---------------------------------------


CACHE_PROMPT_ADAPTERS = ("openai-chat", "openai-responses")


def check_options(options: RunOptions) -> list[Problem]:
    problems = []
    if not options.model or not options.model.strip():
        problems.append(Problem("benchpack run", "--model", "must not be empty"))
    parts = urlsplit(options.endpoint or "")
    if parts.scheme not in ("http", "https") or not parts.netloc:
        problems.append(Problem("benchpack run", "--endpoint", f"not an http(s) URL: {options.endpoint!r}"))
    if options.openai_stream_usage not in OPENAI_STREAM_USAGE:
        problems.append(
            Problem("benchpack run", "--openai-stream-usage", f"must be one of {', '.join(OPENAI_STREAM_USAGE)}")
        )
    if options.repetitions is not None and (isinstance(options.repetitions, bool)
                                            or not isinstance(options.repetitions, int) or options.repetitions < 1):
        problems.append(Problem("benchpack run", "--repetitions", f"must be an integer >= 1, got {options.repetitions!r}"))
    if options.prompt_cache is not None and options.prompt_cache not in prompt_cache.POLICIES:
        problems.append(Problem("benchpack run", "--prompt-cache",
                                f"must be one of {', '.join(prompt_cache.POLICIES)}, got {options.prompt_cache!r}"))
    problems += lane_runs.check_lane_options(options.lanes, options.max_depth)
    return problems


def effective_pack(pack: Pack, options: RunOptions) -> Pack:
    """The pack as this run executes it: command-line overrides applied to its defaults."""
    changes: dict[str, Any] = {}
    if options.repetitions is not None:
        changes["repetitions"] = options.repetitions
    if options.prompt_cache is not None:
        changes["prompt_cache"] = options.prompt_cache
    if not changes:
        return pack
    return msgspec.structs.replace(pack, defaults=msgspec.structs.replace(pack.defaults, **changes))


def run_plan(pack: Pack, options: RunOptions) -> dict:
    """The row's `run_plan`: how many executions this run made of each case, and who said so."""
    return {
        "warmup": pack.defaults.warmup,
        "repetitions": pack.defaults.repetitions,
        "repetitions_source": "--repetitions" if options.repetitions is not None else "pack",
        "prompt_cache": pack.defaults.prompt_cache,
        "prompt_cache_source": "--prompt-cache" if options.prompt_cache is not None else "pack",
    }


def _resolve_adapter(options: RunOptions) -> Adapter:
    return get_adapter(options.adapter)


# --- the output directory ----------------------------------------------------

# A result directory written by us always has one of these (hardware.json is
# written first); --force only ever replaces such a directory.
RESULT_MARKERS = ("hardware.json", RUN_FILE, "summary.md")


def _inside(path: Path, parent: Path) -> bool:
    return path == parent or parent in path.parents


def check_out_dir(out: Path, *, force: bool, pack_root: Path) -> None:
    """Refuse an output directory that would mix or destroy evidence."""
    where = str(out)
    if out.is_symlink() and not out.exists():
        raise ConfigError(Problem(where, "--out", "is a dangling symlink"))
    if out.exists() and not out.is_dir():
        raise ConfigError(Problem(where, "--out", "exists and is not a directory"))
    if not out.exists() or not any(out.iterdir()):
        return
    if not force:
        raise ConfigError(Problem(where, "--out", "exists and is not empty (pass --force to replace it)"))
    if out.is_symlink():
        raise ConfigError(Problem(where, "--force", "refusing to replace a symlink; pass its target"))
    resolved, pack = out.resolve(), pack_root.resolve()
    protected = {"the current directory": Path.cwd().resolve(), "the home directory": Path.home().resolve()}
    for name, path in protected.items():
        if _inside(path, resolved):
            raise ConfigError(Problem(where, "--force", f"refusing to replace {name} or a parent of it"))
    if _inside(resolved, pack) or _inside(pack, resolved):
        raise ConfigError(Problem(where, "--force", "refusing to replace a directory inside or containing the pack"))
    if not any((out / marker).exists() for marker in RESULT_MARKERS):
        raise ConfigError(
            Problem(where, "--force", "refusing to replace a directory that is not a benchpack result directory")
        )


def create_out_dir(out: Path, *, force: bool) -> None:
    if force and out.is_dir() and any(out.iterdir()):
        shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)


# --- one execution -----------------------------------------------------------


def _write_json(path: Path, data: Any) -> None:
    # msgspec encodes and indents in C: json.dumps with indent= takes its pure-Python path, which for a
    # streamed response (every event kept) was most of a request's bookkeeping CPU. The text is the same as
    # json.dumps(indent=2, ensure_ascii=False) gives (one difference: an exponent is written 1e20, not 1e+20).
    encoded = msgspec.json.format(msgspec.json.encode(data, enc_hook=str), indent=2) + b"\n"
    # os.open/os.write: two raw files per request, and Python's buffered file object around each
    # (made, flushed, closed) cost more CPU than the three system calls themselves.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_BINARY", 0), 0o666)
    try:
        view = memoryview(encoded)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)


def raw_stem(case_id: str, number: int, warmup: bool, repetitions: int) -> str:
    """`<case>` for a single repetition, else `<case>.rep-NNN`; `<case>.warmup-NNN` for warmups."""
    if warmup:
        return f"{case_id}.warmup-{number:03d}"
    if repetitions == 1:
        return case_id
    return f"{case_id}.rep-{number:03d}"


# The output budget of the runner's own request for a case an external agent solves (`--agent`, or the
# case's external-agent harness): that answer is thrown away, the agent's session is the work and the
# verifier judges the agent's workspace. A full generation (4096 tokens on some packs) would cost a slow
# local server many minutes before the agent even starts; one token keeps a real, timed request (prompt
# sent, TTFT, prompt tokens) and every row field in place. docs/agents.md, "The runner's own request".
AGENT_CASE_MAX_TOKENS = 1


def runner_max_tokens(pack: Pack, case: Case, options: RunOptions) -> int | None:
    """The max_tokens the runner's own request for `case` sends: the pack's, or the cap under an external agent."""
    if repo_task.solved_by_external_agent(case, options):
        return AGENT_CASE_MAX_TOKENS
    return pack.defaults.max_tokens


def _request(pack: Pack, case: Case, options: RunOptions, prepared: prompt_cache.PreparedPrompt) -> AdapterRequest:
    # `prepared.prompt` is the case prompt as this request sends it (nonce line, lane filler).
    defaults = pack.defaults
    return AdapterRequest(
        model=options.model,
        prompt=prepared.prompt,
        endpoint=options.endpoint,
        temperature=defaults.temperature,
        max_tokens=runner_max_tokens(pack, case, options),
        stream=defaults.stream,
        openai_stream_usage=options.openai_stream_usage,
        extra_body=prepared.extra_body,
        tools=list(case.tools) or None,
        tool_choice=case.tool_choice,
    )


def request_record(pack: Pack, case: Case, options: RunOptions) -> dict:
    """The row's `request`: what was asked, for the registry's workload key
    (benchpack.registry.fingerprint.workload_key) without the pack at hand."""
    from benchpack.packs.case_content import case_digest

    defaults = pack.defaults
    record = {"temperature": defaults.temperature, "max_tokens": defaults.max_tokens, "stream": defaults.stream,
              "openai_stream_usage": options.openai_stream_usage, "case_sha256": case_digest(pack, case)}
    sent = runner_max_tokens(pack, case, options)
    if sent != defaults.max_tokens:
        # `max_tokens` stays the case's budget (the workload key's, and the agent's per turn through its
        # context file); this says the runner's own request was capped, so its timing covers one token.
        record["runner_max_tokens"] = sent
    return record


def requested_url(adapter: Adapter, endpoint: str) -> str:
    """The URL the adapter sends requests to (the row's `endpoint`), e.g. `…/v1` -> `…/v1/chat/completions`."""
    resolve = getattr(adapter, "endpoint_url", None)
    return resolve(endpoint) if callable(resolve) else endpoint


def _call_adapter(adapter: Adapter, request: AdapterRequest) -> AdapterResult:
    try:
        return adapter.run(request)
    except Exception as exc:  # adapters must not raise; if one does, the run still goes on
        return AdapterResult(
            ok=False,
            error=f"adapter raised {type(exc).__name__}: {exc}",
            output_text="",
            reasoning_text="",
            timing={},
            tokens={},
            backend=None,
            request_payload={},
            response_payload={"error": _exception_text(exc)},
        )


def _exception_text(exc: BaseException) -> str:
    import traceback  # only when an adapter raised

    return "".join(traceback.format_exception_only(exc)).strip()


def _failed_result(error: str) -> AdapterResult:
    return AdapterResult(False, error, "", "", {}, {}, None, {}, None)


def _write_raw(out: Path, stem: str, result: AdapterResult) -> dict:
    request_path, response_path = f"raw/{stem}.request.json", f"raw/{stem}.response.json"
    response = result.response_payload
    if response is None and result.error:
        response = {"error": result.error}
    _write_json(out / request_path, result.request_payload)
    _write_json(out / response_path, response)
    return {"request_path": request_path, "response_path": response_path}


class _Run:
    """State of one run in progress; `run_pack` is the public entry."""

    def __init__(self, pack, options, progress, adapter, executor, server: server_info.ServerInfo,
                 energy: EnergyMeter | None = None):
        self.pack, self.options, self.progress = pack, options, progress
        self.adapter, self.executor, self.server = adapter, executor, server
        self.energy = energy
        self.out = Path(options.out)
        self.rows: list[dict] = []
        self.executions_done = 0
        # Lanes with concurrent requests record rows from several threads.
        self.lock = threading.Lock()
        self.run_file = None
        # One record per concurrency level / arrival rate: duration and the level's energy.
        self.level_records: list[dict] = []
        self.endpoint = requested_url(adapter, options.endpoint)
        self.plan = run_plan(pack, options)
        # llama-server's per-request cache switch: honoured on chat completions and /v1/responses,
        # ignored on /v1/messages (checked on the real server; docs/agents.md).
        self.cache_prompt_param = server.honours_cache_prompt and options.adapter in CACHE_PROMPT_ADAPTERS
        # Each case's row `request` (its digest hashes the case's declaration): the same for every
        # repetition, so made once per case, not once per request.
        self._request_records: dict[int, tuple[Case, dict]] = {}

    def request_record(self, case: Case) -> dict:
        known = self._request_records.get(id(case))
        if known is None or known[0] is not case:
            known = self._request_records[id(case)] = (case, request_record(self.pack, case, self.options))
        return known[1]

    def prepared(self, case: Case, prefix: str = "") -> prompt_cache.PreparedPrompt:
        """The request's prompt: nonce line (cold), then a lane's filler `prefix`, then the case prompt."""
        return prompt_cache.prepare(prefix + case.prompt, self.pack.defaults.prompt_cache,
                                    cache_prompt_param=self.cache_prompt_param)

    def row_warnings(self, served: str | None) -> list[dict]:
        mismatch = server_info.model_mismatch(self.options.model, served)
        return [{"code": "model-mismatch", "message": mismatch}] if mismatch else []

    def _score(self, case: Case, result: AdapterResult) -> dict | None:
        if case.scoring is not None and case.scoring.mode == "verify-script":
            # Only the repo-task executor can run the verifier; when it did not
            # (the execution failed before), the row must not read as unscored.
            return {"mode": "verify-script", "passed": False}
        return scoring.score(case.scoring, result.output_text, result.tool_calls, case.tools)

    def warmup(self, case: Case, number: int, *, prefix: str = "", stem: str | None = None,
               quiet: bool = False) -> None:
        """One unrecorded execution; `quiet=True` leaves progress to the caller (a lane's worker thread)."""
        if not quiet:
            self.progress.execution_started(case.id, number, True)
        result = _call_adapter(self.adapter, _request(self.pack, case, self.options, self.prepared(case, prefix)))
        _write_raw(self.out, stem or raw_stem(case.id, number, True, 1), result)
        with self.lock:
            self.executions_done += 1
        if not quiet:
            self.progress.execution_finished(case.id, number, True, None)

    def measured(self, case: Case, repetition: int, run_file=None, *, prefix: str = "", stem: str | None = None,
                 lane: dict | None = None, energy: bool = True, quiet: bool = False,
                 level_start: float | None = None, defer: list | None = None) -> str | None:
        """Run and record one measured execution; returns an abort reason or None.

        A lane passes the filler `prefix`, the raw-file `stem`, its row fields
        (`lane`: depth_tokens / concurrency / arrival_rate, and `load`), and
        `energy=False` when requests overlap (the lane measures the level),
        `quiet=True` to leave progress to the lane (no redraw while other
        streams are on the wire), and `level_start` (perf_counter) to record
        when the request was sent and done relative to its level (`load`).
        With `defer` (a list), the row is not built or written here: a
        function that does it is appended, for the lane to call when no
        other request is on the wire (building a row and writing its raw
        files takes the GIL for milliseconds, which would delay the other
        streams' token stamps). Safe to call from several threads at once.
        """
        repetitions = self.pack.defaults.repetitions
        if not quiet:
            self.progress.execution_started(case.id, repetition, False)
        context, extra, abort = None, {}, None
        prepared = self.prepared(case, prefix)
        meter = self.energy if energy else None
        try:
            if case.kind == REPO_TASK:
                context = self.executor.prepare(case, repetition, self.out)
            window = meter.start() if meter is not None else None  # outside the request's timed window
            request = _request(self.pack, case, self.options, prepared)
            sent = perf_counter()
            result = _call_adapter(self.adapter, request)
            done = perf_counter()
            if level_start is not None and lane is not None:
                lane = {**lane, "load": {**lane.get("load", {}), "sent_offset_s": round(sent - level_start, 6),
                                         "done_offset_s": round(done - level_start, 6)}}
            if window is not None:
                extra["energy"] = window.stop()
            if case.kind == REPO_TASK:
                extra.update(self.executor.finish(context, result) or {})
        except BenchpackError as exc:
            abort = "; ".join(exc.lines())
            result = _failed_result(f"repo-task runner failure: {abort}")
        if case.kind == REPO_TASK:  # every repo-task row says how its candidate code was isolated
            extra.setdefault("sandbox", getattr(self.executor, "sandbox_mode", "none"))

        def record() -> None:
            self._record(case, repetition, stem, prepared, result, extra, lane, run_file, quiet)

        if defer is not None:
            with self.lock:
                defer.append(record)
        else:
            record()
        return abort

    def _record(self, case: Case, repetition: int, stem: str | None, prepared: prompt_cache.PreparedPrompt,
                result: AdapterResult, extra: dict, lane: dict | None, run_file, quiet: bool) -> None:
        """Build one measured execution's row, write its raw files, append and fsync it."""
        repetitions = self.pack.defaults.repetitions
        raw = _write_raw(self.out, stem or raw_stem(case.id, repetition, False, repetitions), result)
        row_scoring = extra.pop("scoring") if "scoring" in extra else self._score(case, result)
        row_scoring = scoring.never_passed_when_failed(row_scoring, result.ok)
        served = server_info.served_model(self.server, result.served_model)
        row = build_row(
            pack=self.pack,
            case_id=case.id,
            adapter_id=self.options.adapter,
            endpoint=self.endpoint,
            model=self.options.model,
            result=result,
            scoring=row_scoring,
            raw=raw,
            repetition=repetition if repetitions > 1 or lane else None,
            extra={
                **(lane or {}),
                "model_served": served,
                "finish_reason": result.finish_reason,
                "prompt_cache": prepared.record,
                "run_plan": self.plan,
                "request": self.request_record(case),
                "warnings": self.row_warnings(served),
                **({"tool_calls": result.tool_calls} if case.tools else {}),
                **extra,
            },
        )
        with self.lock:
            (run_file or self.run_file).append(row)
            self.rows.append(row)
            self.executions_done += 1
        if not quiet:
            self.progress.execution_finished(case.id, repetition, False, row)

    def execute(self) -> str | None:
        # Closed (its last rows fsynced) however execute ends: a Ctrl-C or an exception included.
        with RowLog(self.out / RUN_FILE) as run_file:
            self.run_file = run_file
            if lane_runs.runs_base(self.options.lanes):
                abort = self._base_cases(run_file)
                if abort:
                    return abort
            lane_runs.run_lanes(self)
        return None

    def _base_cases(self, run_file) -> str | None:
        """The base cases, one request after another from this thread.

        This thread times every one of them, so it asks for short scheduler
        turns once for the whole sequence (`sched.shortened`; each request's
        timed window then finds them set and makes no system call) and gets
        its usual turns back after the last one. Not for repo-task cases:
        their executor starts the candidate's processes from this thread,
        and those would inherit the short turns.
        """
        defaults = self.pack.defaults
        hold = (sched.shortened() if not any(case.kind == REPO_TASK for case in self.pack.cases)
                else contextlib.nullcontext())
        with hold:
            for case in self.pack.cases:
                for number in range(1, defaults.warmup + 1):
                    self.warmup(case, number)
                for repetition in range(1, defaults.repetitions + 1):
                    abort = self.measured(case, repetition, run_file)
                    if abort:
                        return abort
        return None


def total_executions(pack: Pack, options: RunOptions | None = None, server=None) -> int:
    base = len(pack.cases) * (pack.defaults.warmup + pack.defaults.repetitions)
    if options is None:
        return base
    plan = lane_runs.lane_plan(pack, options, server)
    return (base if lane_runs.runs_base(options.lanes) else 0) + plan.executions


def planned_rows(pack: Pack, options: RunOptions | None = None, server=None) -> int:
    base = len(pack.cases) * pack.defaults.repetitions
    if options is None:
        return base
    plan = lane_runs.lane_plan(pack, options, server)
    return (base if lane_runs.runs_base(options.lanes) else 0) + plan.rows


def run_pack(
    pack: Pack,
    options: RunOptions,
    progress: ProgressSink | None = None,
    *,
    adapter: Adapter | None = None,
    repo_task_executor: RepoTaskExecutor | None = None,
    warn: Callable[[str], None] | None = None,
    probe_client: httpx.Client | None = None,
    energy_meter: EnergyMeter | None = None,
) -> RunOutcome:
    """Run every case of `pack` and write the result directory `options.out`.

    `adapter` and `repo_task_executor` default to the registered ones for
    `options.adapter` / `benchpack.repo_task.make_executor`; callers pass
    their own to run against something else (tests, a worker). `warn` is
    told, before the first request, what the server's answers to the probes
    make doubtful (a model it does not serve, a configuration the
    run-metadata file contradicts), so a person can stop the run early.
    `probe_client` makes the server probes (a worker passes its pinned
    client, so probes reach only the allowlisted address too).
    `energy_meter` reads energy around each request (default: the sources
    this machine exposes, `EnergyMeter.discover()`; rows say why when none).
    Raises BenchpackError (and writes nothing) for invalid input.
    """
    progress = progress or NullProgress()
    scoring.check_runnable(pack)
    problems = check_options(options)
    tool_cases = [case.id for case in pack.cases if case.tools]
    if tool_cases and options.adapter not in TOOL_ADAPTER_IDS:
        problems.append(Problem("benchpack run", "--adapter",
                                f"{options.adapter} cannot send native tool calls (cases {', '.join(tool_cases)} "
                                f"send tools); use one of {', '.join(TOOL_ADAPTER_IDS)}"))
    if options.run_metadata is not None:
        try:
            validate_run_metadata(options.run_metadata, "run metadata")
        except BenchpackError as exc:
            problems += exc.problems
    if problems:
        raise ConfigError(problems)
    pack = effective_pack(pack, options)
    adapter = adapter or _resolve_adapter(options)
    if repo_task_executor is None and any(case.kind == REPO_TASK for case in pack.cases):
        from benchpack.agents import proxy as agent_proxy

        repo_task_executor = repo_task.make_executor(pack, options, proxy_factory=agent_proxy.proxy_factory)
    out = Path(options.out)
    check_out_dir(out, force=options.force, pack_root=pack.root)
    hardware = collect_hardware(options.host_label)
    # Asked before the output directory exists and outside any timed request.
    server = (server_info.probe_server(options.adapter, options.endpoint, options.model, client=probe_client)
              if options.probe_server else server_info.ServerInfo())
    outcome = RunOutcome(out=out, planned_rows=planned_rows(pack, options, server), server=server)
    outcome.warnings += lane_runs.lane_plan(pack, options, server).skipped
    record = RunRecord(options=options, pack=pack, server=server, endpoint=requested_url(adapter, options.endpoint),
                       plan=run_plan(pack, options))
    metadata = start_run_metadata(options.run_metadata, record, outcome.warnings)
    for message in outcome.warnings if warn else ():
        warn(message)

    create_out_dir(out, force=options.force)
    (out / "raw").mkdir()
    write_hardware(out, hardware)
    write_run_metadata(out, metadata)

    meter = energy_meter or EnergyMeter.discover()
    run = _Run(pack, options, progress, adapter, repo_task_executor, server, meter)
    executions = total_executions(pack, options, server)
    progress.started(executions)
    crashed: str | None = None
    try:
        outcome.aborted = run.execute()
    except KeyboardInterrupt:
        outcome.interrupted = True
    except BaseException as exc:
        crashed = f"the runner stopped on {type(exc).__name__}: {exc}"
        raise
    finally:
        # Also on an unexpected crash: the rows on disk deserve a summary,
        # and the metadata must say the run did not finish.
        outcome.rows, outcome.rows_from_disk = _rows_on_disk(out, run.rows)
        if options.probe_server:
            server_info.probe_loaded_model(options.adapter, options.endpoint, options.model, server,
                                           client=probe_client)
        outcome.complete, outcome.incomplete_reason = _completeness(outcome, crashed, run.executions_done,
                                                                    executions)
        metadata = finish_run_metadata(metadata, record, outcome.rows, outcome.complete, outcome.incomplete_reason,
                                       outcome.warnings)
        if run.level_records:
            slo = pack.lanes.slo
            metadata["lanes"] = {"levels": run.level_records,
                                 "slo": None if slo is None else {"ttft_s": slo.ttft_s, "tpot_s": slo.tpot_s}}
        write_run_metadata(out, metadata)
        extra_sections = _summary_sections(repo_task_executor, outcome.rows, out) + lane_runs.summary_sections(
            pack, outcome.rows, run.level_records)
        write_summary(out, pack, outcome.rows, hardware, metadata, extra_sections)
        progress.finished()
        if energy_meter is None:
            meter.close()
    outcome.all_ok = all(row["ok"] for row in outcome.rows) and not outcome.aborted
    return outcome


def _completeness(outcome: RunOutcome, crashed: str | None, done: int, total: int) -> tuple[bool, str | None]:
    """Whether every planned execution ran, and if not, why (run-metadata `incomplete_reason`)."""
    if crashed:
        return False, crashed
    if outcome.interrupted:
        return False, f"interrupted (Ctrl-C) after {done} of {total} executions"
    if outcome.aborted:
        return False, f"stopped early after {done} of {total} executions: {outcome.aborted}"
    if len(outcome.rows) < outcome.planned_rows:
        return False, f"{len(outcome.rows)} of {outcome.planned_rows} planned rows were written"
    return True, None


def _rows_on_disk(out: Path, in_memory: list[dict]) -> tuple[list[dict], bool]:
    """run.jsonl is the record; an interrupt can land between writing a row and keeping it in memory.
    With whether the rows are the file's."""
    try:
        return read_rows(out / RUN_FILE), True
    except BenchpackError:
        return in_memory, False


def _summary_sections(executor: Any, rows: list[dict], out: Path) -> list[str]:
    """Optional `summary_sections(rows, out) -> list[str]` on the repo-task executor."""
    sections = getattr(executor, "summary_sections", None)
    if sections is None:
        return []
    try:
        return list(sections(rows, out))
    except Exception as exc:  # a summary add-on must not hide the results table
        return [f"Could not summarise repo-task artifacts: {exc}"]
