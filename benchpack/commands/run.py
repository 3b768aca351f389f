"""`benchpack run PACK --adapter A --model M --endpoint URL [--out DIR]`.

Exit status (README, "Exit status"): 0 when every execution ran — an answer
that fails its check is a result, not an error (`--fail-on-check` makes it
one); 1 when an execution failed to run (endpoint error, broken stream) or
the run stopped early; 2 for invalid input (nothing written); 130 on Ctrl-C
(the rows done so far, the summary and run-metadata.json marked incomplete
are kept).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

# The runner (httpx, jsonschema, psutil) is imported in handle(), not here: `benchpack --help` builds
# this parser too. The same tuples as runner.OPENAI_STREAM_USAGE and prompt_cache.POLICIES
# (tests/cli/test_cli_startup.py holds them equal).
OPENAI_STREAM_USAGE = ("include", "omit")
POLICIES = ("cold", "server-default")

ADAPTER_CHOICES = ("openai-chat", "ollama-generate", "anthropic-messages", "openai-responses")
ENDPOINT_HELP = ("the server's URL, e.g. http://127.0.0.1:8080 (openai-chat adds /v1/chat/completions, "
                 "anthropic-messages /v1/messages, openai-responses /v1/responses, "
                 "ollama-generate /api/generate; a full URL is used as given)")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "run",
        help="run a benchmark pack against an endpoint and write a result directory",
        description="Run every case of a pack (warmups and repetitions from the pack's defaults) "
        "and write run.jsonl, hardware.json, run-metadata.json, summary.md and raw/ into --out. "
        "Ends with a per-case table and the reason of every failure. Exit status: 0 every execution ran "
        "(answers that fail their check are results), 1 an execution failed to run or the run stopped "
        "early, 2 invalid input, 130 interrupted.",
        epilog="example (the built-in scripted endpoint, no model needed):\n"
        "  benchpack refserver --port 8081 --like llama-server &\n"
        "  benchpack run smoke-chat --adapter openai-chat --model refserver-model --endpoint http://127.0.0.1:8081\n"
        "example (a llama-server on port 8080, a chosen directory):\n"
        "  benchpack run runtime-sweep --adapter openai-chat --model local --endpoint http://127.0.0.1:8080 "
        "--out results/sweep",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("pack", help="pack directory, benchpack.toml, or bundled pack id (see `benchpack list`)")
    parser.add_argument("--adapter", required=True, choices=ADAPTER_CHOICES)
    parser.add_argument("--model", required=True, help="model name sent to the endpoint")
    parser.add_argument("--endpoint", required=True, help=ENDPOINT_HELP)
    parser.add_argument("--out", type=Path,
                        help="result directory to create (default: results/<date>-<host label>, the seed's; "
                        "-2, -3 … appended when that one already holds a run)")
    parser.add_argument("--host-label", help="record this instead of the machine's hostname")
    parser.add_argument("--run-metadata", type=Path, metavar="FILE",
                        help="JSON file describing the runtime, model and conditions (README: run metadata); "
                        "what the server reports about itself is added to it")
    parser.add_argument("--repetitions", type=int, metavar="N",
                        help="measured executions per case instead of the pack's default (recorded in every row)")
    parser.add_argument("--prompt-cache", choices=POLICIES,
                        help="cold: a fresh, uncacheable prompt for every request (and cache_prompt=false where "
                        "the server honours it); server-default: prompts as written. Default: the pack's")
    parser.add_argument("--openai-stream-usage", choices=OPENAI_STREAM_USAGE, default="include",
                        help="include: ask a streaming openai-chat server for token counts "
                        "(stream_options.include_usage); omit: for servers that refuse that option "
                        "(the request is never retried in another shape)")
    parser.add_argument("--lanes", metavar="LIST",
                        type=lambda text: tuple(part.strip() for part in text.split(",") if part.strip()),
                        help="which of base,depth,concurrency,rate to run (comma-separated); default: the base "
                        "cases and every lane the pack declares (docs/lanes.md)")
    parser.add_argument("--max-depth", type=int, metavar="TOKENS",
                        help="skip depth-lane depths above this (depths that do not fit the server's reported "
                        "context are skipped anyway)")
    parser.add_argument("--fail-on-check", action="store_true",
                        help="exit 1 also when an answer fails its check")
    parser.add_argument("--force", action="store_true",
                        help="replace an existing non-empty result directory")
    parser.add_argument("--unsandboxed", action="store_true",
                        help="run repo-task candidate code without bubblewrap (only where none is available); "
                             "every row then says sandbox: none and ranks below sandboxed results")
    parser.add_argument("--agent", metavar="NAME",
                        help="a built-in coding-agent recipe (mini-swe-agent, aider) solves every repo-task case "
                             "through the measuring proxy; installed on first use into its own pinned environment "
                             "(docs/agents.md)")
    parser.add_argument("--agent-timeout", type=float, metavar="SECONDS",
                        help="the agent's time limit per execution (default 600)")
    parser.add_argument("--agent-steps", type=int, metavar="N",
                        help="the agent's model-call limit per execution (mini-swe-agent: default 20)")
    parser.set_defaults(handler=handle)


def default_out(host_label: str | None, today: str | None = None) -> Path:
    """`results/<YYYY-MM-DD>-<host label>` (the seed's default): the --host-label, else the hostname,
    made safe for a directory name; the next free `-2`, `-3` … when it already holds a run (a second
    run on the same day is a new result, not a mistake to stop on)."""
    import datetime
    import re
    import socket

    label = host_label or socket.gethostname() or "host"
    label = re.sub(r"[^A-Za-z0-9._-]+", "-", label).strip("-.") or "host"
    base = Path("results") / f"{today or datetime.date.today().isoformat()}-{label}"
    candidate, number = base, 1
    while candidate.exists() and (not candidate.is_dir() or any(candidate.iterdir())):
        number += 1
        candidate = base.with_name(f"{base.name}-{number}")
    return candidate


# What `handle` imports before the first request (the same modules as `_handle`'s first lines).
RUN_MODULES = ("benchpack.packs.loader", "benchpack.run.progress", "benchpack.reporting.run_summary",
               "benchpack.run.metadata", "benchpack.run.runner")


def handle(args: argparse.Namespace) -> int:
    """`_handle` with the run's modules imported once, the cyclic collector off, and then frozen.

    Importing the runner makes ~16,000 objects (classes, functions, their dicts) that live as long as the
    process. With the collector on, each of them is scanned by the young collections the imports
    themselves trigger, and again when promoted; frozen (gc.freeze), none is scanned again. Reference
    counting still frees what they drop. Unfrozen when the command ends, so a process that calls this
    repeatedly (the tests) keeps the collector as it was. Measured: docs/measurement.md, "Start-up and
    closing CPU: stop 38".
    """
    import gc
    import importlib

    from benchpack.adapters import adapter_module

    collecting = gc.isenabled()
    gc.disable()
    try:
        # and the chosen adapter's module (openai-chat's brings msgspec), frozen with them, not during the run
        for name in (*RUN_MODULES, adapter_module(args.adapter) or "benchpack.adapters"):
            importlib.import_module(name)
    finally:
        gc.freeze()
        if collecting:
            gc.enable()
    try:
        return _handle(args)
    finally:
        gc.unfreeze()
        if collecting:  # `_handle` turns it off for the closing table
            gc.enable()


def _handle(args: argparse.Namespace) -> int:
    import gc

    from benchpack.packs.loader import load_pack, resolve_pack_path
    from benchpack.run.progress import progress_for
    from benchpack.reporting.run_summary import count_rows
    from benchpack.run.metadata import load_run_metadata
    from benchpack.run.runner import RunOptions, effective_pack, run_pack

    pack = load_pack(resolve_pack_path(args.pack))
    if args.out is None:
        args.out = default_out(args.host_label)
    metadata = load_run_metadata(args.run_metadata) if args.run_metadata else None
    agent_argv = None
    if args.agent:
        from benchpack.agents import recipes
        from benchpack.errors import ConfigError, Problem

        chosen = recipes.recipe(args.agent)
        if not any(case.kind == "repo-task" for case in pack.cases):
            raise ConfigError(Problem("--agent", args.agent, f"pack {pack.id} has no repo-task case for an agent to "
                                      "solve (the coding packs: benchpack list)"))  # fmt: skip
        recipes.agent_argv(chosen, steps=args.agent_steps)  # a bad --agent-steps fails before any install
        venv = recipes.ensure_installed(chosen, lambda text: print(f"benchpack run: {text}", file=sys.stderr))
        agent_argv = recipes.agent_argv(chosen, venv, steps=args.agent_steps)
    options = RunOptions(
        adapter=args.adapter,
        model=args.model,
        endpoint=args.endpoint,
        out=args.out,
        host_label=args.host_label,
        run_metadata=metadata,
        openai_stream_usage=args.openai_stream_usage,
        force=args.force,
        unsandboxed=args.unsandboxed,
        repetitions=args.repetitions,
        prompt_cache=args.prompt_cache,
        lanes=args.lanes or None,  # None: the base cases and every lane the pack declares
        max_depth=args.max_depth,
        external_agent_argv=agent_argv,
        agent=args.agent,
        agent_timeout_s=args.agent_timeout,
    )
    planned = effective_pack(pack, options)
    progress = progress_for(planned.defaults.repetitions, planned.defaults.warmup, sys.stdout,
                            live_clock=not planned.defaults.stream)
    printed: list[str] = []  # warned about before the first request: not repeated in the summary

    def warn(message: str) -> None:
        printed.append(message)
        print(f"benchpack run: warning: {message}", file=sys.stderr)

    try:
        outcome = run_pack(pack, options, progress, warn=warn)
    except KeyboardInterrupt:  # between executions, before the runner could catch it
        print("benchpack run: interrupted", file=sys.stderr)
        return 130
    # After the last response the collector has nothing to gain: what is left (the closing table's imports
    # and figures over rows already in memory) is short and bounded by the rows, and a collection there
    # scans every row and module object made since the freeze. `handle` turns it back on.
    gc.disable()
    print_summary(outcome, already_printed=printed)
    counts = count_rows(outcome.rows)
    for line in agent_lines(outcome.rows):
        print(line)
    print(f"{counts.line()}; results in {outcome.out}")
    if outcome.aborted:
        print(f"benchpack run: stopped early: {outcome.aborted}", file=sys.stderr)
    if outcome.interrupted:
        print("benchpack run: interrupted; kept the rows written so far (run-metadata.json says incomplete)",
              file=sys.stderr)
        return 130
    if counts.failed_to_run or outcome.aborted:
        return 1
    if args.fail_on_check and counts.failed_check:
        return 1
    return 0


def agent_lines(rows: list[dict]) -> list[str]:
    """Pass rate and speed together, over the rows an agent session was measured for (docs/agents.md):
    the pass rate as every surface words it, and the agent's figures with the metric registry's labels
    and digits (the names the registry's boards and answer use), medians over the tasks."""
    from benchpack.measurement.stats import median
    from benchpack.results.metrics import AGENT_METRICS, metric, pass_text

    sessions = [r for r in rows if isinstance(r.get("agent_session"), dict)]
    if not sessions:
        return []
    verdicts = [(r.get("scoring") or {}).get("passed") for r in sessions]
    scored = [v for v in verdicts if isinstance(v, bool)]
    figures = []
    for name in (*AGENT_METRICS, "agent_turns"):
        m = metric(name)
        value = median(m.value(r) for r in sessions)
        figures.append(f"{m.label} {m.display(value)}{' ' + m.unit if value is not None and m.unit else ''}")
    tokens = lambda key: median(r["agent_session"].get(key) for r in sessions)  # noqa: E731
    shown = lambda value: "—" if value is None else f"{value:.0f}"  # noqa: E731
    return [f"agent: pass rate {pass_text(sum(scored), len(scored))}; median per task: {', '.join(figures)}, "
            f"tokens in {shown(tokens('prompt_tokens'))} out {shown(tokens('output_tokens'))}"]


def print_summary(outcome, already_printed: list[str] = ()) -> None:
    from benchpack.reporting.document import print_blocks, terminal_console, to_markdown
    from benchpack.reporting.run_summary import summary_blocks
    from benchpack.errors import BenchpackError
    from benchpack.results.resultdir import ResultDir, load_result_dir

    try:
        # with hardware.json and run-metadata.json: the verdict needs the machine and the model's size,
        # and a scripted endpoint is told apart by what the probe recorded
        # run.jsonl's rows as the runner read them back, when it did: parsed once, not twice
        written = load_result_dir(outcome.out, rows=outcome.rows if outcome.rows_from_disk else None)
        result = ResultDir(path=outcome.out, rows=outcome.rows, hardware=written.hardware,
                           run_metadata=written.run_metadata)
    except (BenchpackError, OSError, ValueError):
        result = ResultDir(path=outcome.out, rows=outcome.rows)
    # Each warning is said once: those printed when the run started are not listed again
    # (all of them are in run-metadata.json and summary.md).
    blocks = summary_blocks(result, [w for w in outcome.warnings if w not in already_printed],
                            outcome.incomplete_reason)
    if not blocks:
        return
    if sys.stdout.isatty():
        print_blocks(blocks, terminal_console(sys.stdout))
    else:
        sys.stdout.write(to_markdown(blocks) + "\n")
