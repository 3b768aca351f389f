"""`benchpack selftest`: measure the runner's own measurement error.

Starts the reference server, measures TTFT overhead, TPOT error and client
CPU per chunk for benchpack and two plain baseline loops side by side, runs
a tiny pack end to end, prints pass/fail per target. Exit 0 when every
target passes, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "selftest",
        help="measure benchpack's own timing error against a built-in reference server",
        description="Start the built-in reference endpoint (its own process, known token timing) and report "
        "how far benchpack's TTFT, TPOT and CPU cost are from the truth, next to a plain httpx loop and a "
        "plain aiohttp loop measured in the same run. Exit 0 when every target passes.",
    )
    parser.add_argument("--thorough", action="store_true", help="5x more samples (about a minute longer)")
    parser.add_argument("--skip-pack", action="store_true", help="skip the end-to-end pack run")
    parser.add_argument("--json", action="store_true", help="print figures and checks as JSON instead of tables")
    parser.add_argument("--proxy", action="store_true",
                        help="also measure what the agents' measuring proxy adds to TTFT (docs/agents.md)")
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from benchpack.selfcheck import selftest

    plan = selftest.THOROUGH if args.thorough else selftest.QUICK
    console = Console(stderr=args.json)
    clients = selftest.make_clients()
    # auto_refresh off: a refresh thread would share the GIL with the client being measured.
    with Progress(TextColumn("[bold]selftest[/]"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console, transient=True, auto_refresh=False) as progress:
        task = progress.add_task("requests", total=plan.total_requests(len(clients)))

        def step() -> None:
            progress.advance(task)
            progress.refresh()

        figures = selftest.measure(plan, step, clients)
    summaries = {name: fig.summary() for name, fig in figures.items()}
    checks = selftest.verdict(summaries)
    checks.append(selftest.burst_check())
    if not args.skip_pack:
        with console.status("running a tiny pack end to end"):
            checks.append(_pack_check(selftest))
    proxy = None
    if args.proxy:
        from benchpack.selfcheck import proxycheck

        with console.status("timing requests direct and through the measuring proxy"):
            proxy = proxycheck.measure(1000 if args.thorough else 200)
        checks.append(selftest.Check(
            f"measuring proxy adds ≤ {proxycheck.TARGET_P99_MS:g} ms p99 to TTFT", proxycheck.passes(proxy),
            f"p50 {proxy['added_ttft_p50_ms']:.3f} ms, p99 {proxy['added_ttft_p99_ms']:.3f} ms "
            f"({proxy['requests']} requests each way)"))
    if args.json:
        print(json.dumps({"figures": summaries, "proxy": proxy, "checks": [c.__dict__ for c in checks]}, indent=2))
    else:
        _print_tables(console, selftest, summaries, checks)
    return 0 if all(c.passed for c in checks) else 1


def _pack_check(selftest):
    try:
        return selftest.run_tiny_pack()
    except Exception as exc:  # a broken runner is a failed check, not a crash of the report
        return selftest.Check("tiny pack end to end (runner → run.jsonl)", False, f"{type(exc).__name__}: {exc}")


def _fmt(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def _print_tables(console, selftest, summaries: dict, checks: list) -> None:
    from rich.table import Table

    figures = Table(title="Measurement error against the reference server (lower is better)")
    figures.add_column("figure")
    for name in summaries:
        figures.add_column(name, justify="right", style="bold" if name == "benchpack" else None)
    figures.add_column("target", justify="right")
    for target in selftest.TARGETS:
        figures.add_row(f"{target.label} ({target.unit})", *(_fmt(s[target.metric]) for s in summaries.values()),
                        f"≤ {target.limit:g}")
    console.print(figures)
    verdicts = Table(title="Targets")
    verdicts.add_column("check")
    verdicts.add_column("result")
    verdicts.add_column("measured")
    for check in checks:
        verdicts.add_row(check.label, "[green]pass[/]" if check.passed else "[red]FAIL[/]", check.detail)
    console.print(verdicts)
