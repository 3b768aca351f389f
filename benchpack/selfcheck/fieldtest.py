"""Client accuracy under field conditions: each client its own process, normal priority, a busy neighbour.

`benchpack selftest` shows the floor: the clients in one process, the
latency phases at real-time priority. This shows what `benchpack run`
delivers on a machine doing other work, the way people run benchmark tools:

* every client in a process of its own (spawned, so nothing is inherited),
  at normal priority, never pinned;
* `benchpack` is the openai-chat adapter as `benchpack run` drives it on a
  terminal: its progress bar is live (drawn to a terminal-like sink);
* a CPU-bound neighbour process spins on the last CPU for the whole run;
* the clients take turns request by request against one reference server
  (its own process), so each sees the same stretch of machine noise.

Figures per client, at 10 ms and at 0.5 ms per token: TTFT overhead (the
client's first-content time minus the server's send time of that chunk),
TPOT error against the server's own token spacing, and client CPU per chunk
(whole-process CPU time over the adapter call / chunks the server sent).
`bench/measurement.py --field` prints them with the targets.
"""

from __future__ import annotations

import math
import multiprocessing
import os
import statistics
from dataclasses import dataclass, field
from typing import Any, Callable

from benchpack.refserver.server import RefServer
from benchpack.selfcheck.selftest import percentile


@dataclass(frozen=True)
class ClientSpec:
    """A client to run in its own process; the ablation switches apply to `benchpack` only."""

    name: str
    kind: str  # "benchpack" | "aiohttp" | "httpx lines"
    short_slice: bool = True
    progress: str | None = "window-aware"  # None | "window-aware" (RichProgress) | "rich-auto" (rich's own 10 Hz thread)


DEFAULT_CLIENTS = (ClientSpec("benchpack", "benchpack"), ClientSpec("aiohttp", "aiohttp"),
                   ClientSpec("httpx lines", "httpx lines"))
# What each fix contributes: the same adapter with one part of it as before.
ABLATIONS = (ClientSpec("benchpack, no short slice", "benchpack", short_slice=False),
             ClientSpec("benchpack, rich auto-refresh", "benchpack", progress="rich-auto"),
             ClientSpec("benchpack as before", "benchpack", short_slice=False, progress="rich-auto"))


@dataclass(frozen=True)
class FieldPlan:
    slow_requests: int = 200   # per client at 10 ms per token; p99 is then the 2nd largest
    slow_tokens: int = 20
    fast_requests: int = 30    # per client at 0.5 ms per token
    fast_tokens: int = 400
    ttft_s: float = 0.010

    def scaled(self, factor: float) -> FieldPlan:
        return FieldPlan(max(1, round(self.slow_requests * factor)), self.slow_tokens,
                         max(1, round(self.fast_requests * factor)), self.fast_tokens, self.ttft_s)


# ---- the client processes ----------------------------------------------

class _RichAutoRefresh:
    """The progress sink as RichProgress was before: rich redraws from its own thread, ten times a second."""

    def __init__(self, console: Any) -> None:
        from rich.progress import Progress

        from benchpack.run.progress import RichProgress

        columns = RichProgress(1, 0, console).progress.columns
        self.progress = Progress(*columns, console=console)  # rich's default: auto_refresh=True
        self.task = None

    def started(self, total_executions: int) -> None:
        self.progress.start()
        self.task = self.progress.add_task("starting", total=total_executions, count="", detail="")

    def execution_started(self, case_id: str, repetition: int, warmup: bool, **lane) -> None:
        self.progress.update(self.task, description=f"{case_id} rep {repetition}")

    def execution_finished(self, case_id: str, repetition: int, warmup: bool, row: dict | None, **lane) -> None:
        self.progress.update(self.task, advance=1, count="", detail="")

    def finished(self) -> None:
        self.progress.stop()


class _WithProgress:
    """The benchpack client with a live progress bar, called as the runner calls it around each request."""

    def __init__(self, inner: Any, style: str) -> None:
        from rich.console import Console

        from benchpack.run.progress import RichProgress

        self.inner = inner
        self._sink = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 - closed in close()
        console = Console(file=self._sink, force_terminal=True, width=100)
        self.progress = _RichAutoRefresh(console) if style == "rich-auto" else RichProgress(1, 0, console)
        self.progress.started(1_000_000)

    def request(self, url: str, max_tokens: int | None) -> Any:
        self.progress.execution_started("case", 1, False)
        observation = self.inner.request(url, max_tokens)
        self.progress.execution_finished("case", 1, False, {"ok": True, "timing": {"wall_s": 0.1}})
        return observation

    def close(self) -> None:
        self.progress.finished()
        self.inner.close()
        self._sink.close()


def _make_client(spec: ClientSpec) -> Any:
    from benchpack.selfcheck import selftest
    from benchpack.measurement import sched

    if spec.kind == "benchpack":
        sched.enabled = spec.short_slice
        client = selftest.BenchpackClient()
        return _WithProgress(client, spec.progress) if spec.progress else client
    if spec.kind == "aiohttp":
        return selftest.AiohttpClient()
    if spec.kind == "httpx lines":
        return selftest.HttpxLinesClient()
    raise ValueError(f"unknown client kind {spec.kind!r}")


def _client_main(spec: ClientSpec, conn: Any) -> None:
    try:
        client = _make_client(spec)
    except Exception as exc:  # noqa: BLE001 - reported to the parent (aiohttp may be missing)
        conn.send(exc)
        return
    try:
        conn.send("ready")
        while (command := conn.recv()) is not None:
            try:
                waited = _runqueue_wait_s()
                observation = client.request(*command)
                after = _runqueue_wait_s()
                conn.send((observation, None if waited is None or after is None else after - waited))
            except Exception as exc:  # noqa: BLE001 - reported to the parent, which stops the run
                conn.send(RuntimeError(f"{spec.name}: {exc}"))
    finally:
        client.close()


def _runqueue_wait_s() -> float | None:
    """How long this thread has waited for a CPU while runnable, in total (Linux schedstat); None elsewhere."""
    try:
        with open("/proc/thread-self/schedstat", "rb") as handle:
            return int(handle.read().split()[1]) / 1e9
    except (OSError, ValueError, IndexError):
        return None


class ClientProcess:
    """One client in a spawned process of its own; `request` runs one request there and returns its Observation."""

    def __init__(self, spec: ClientSpec) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.name = spec.name
        self._conn, child = ctx.Pipe()
        self.process = ctx.Process(target=_client_main, args=(spec, child), daemon=True)
        self.process.start()
        child.close()
        answer = self._conn.recv()
        if answer != "ready":
            self.process.join(5)
            raise answer if isinstance(answer, Exception) else RuntimeError(f"client {spec.name} did not start")

    def request(self, url: str, max_tokens: int | None) -> tuple[Any, float | None]:
        """The client's Observation, and how long its process waited for a CPU during the request."""
        self._conn.send((url, max_tokens))
        result = self._conn.recv()
        if isinstance(result, Exception):
            raise result
        return result

    def close(self) -> None:
        try:
            self._conn.send(None)
        except OSError:
            pass
        self.process.join(10)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()
        self._conn.close()


def _spin(cpu: int | None) -> None:
    os.setsid()  # its own session, hence its own scheduling group (autogroup), like work started elsewhere
    if cpu is not None:
        try:
            os.sched_setaffinity(0, {cpu})
        except (AttributeError, OSError):
            pass
    while True:
        pass


class Neighbour:
    """A CPU-bound process (a busy loop) pinned to `cpu` when the system allows it."""

    def __init__(self, cpu: int | None) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.cpu = cpu
        self.process = ctx.Process(target=_spin, args=(cpu,), daemon=True)

    def __enter__(self) -> Neighbour:
        self.process.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.process.pid is not None:
            self.process.kill()
            self.process.join()


def last_cpu() -> int | None:
    try:
        return max(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return None


# ---- figures -------------------------------------------------------------

@dataclass
class RateFigures:
    """One client at one token rate; times in seconds, errors in %."""

    ttft_overhead_s: list[float] = field(default_factory=list)
    tpot_error_pct: list[float] = field(default_factory=list)
    cpu_per_chunk_s: list[float] = field(default_factory=list)
    runqueue_wait_s: list[float | None] = field(default_factory=list)  # per request, for reading the tail

    def summary(self) -> dict[str, float | None]:
        def med(values: list[float]) -> float | None:
            return statistics.median(values) if values else None

        def scaled(value: float | None, factor: float) -> float | None:
            return None if value is None else value * factor

        return {
            "ttft_median_ms": scaled(med(self.ttft_overhead_s), 1e3),
            "ttft_p99_ms": scaled(percentile(self.ttft_overhead_s, 99), 1e3),
            "ttft_max_ms": scaled(max(self.ttft_overhead_s, default=None), 1e3),
            "tpot_error_pct": med(self.tpot_error_pct),
            "cpu_per_chunk_us": scaled(med(self.cpu_per_chunk_s), 1e6),
            "requests": len(self.ttft_overhead_s),
        }


@dataclass
class FieldResult:
    slow: dict[str, RateFigures]  # client name -> figures at 10 ms per token
    fast: dict[str, RateFigures]  # at 0.5 ms per token
    server_send_p99_ms: float | None  # how long the server's own write of a token took (its stamp's uncertainty)
    load_before: tuple[float, float, float] | None
    load_after: tuple[float, float, float] | None
    neighbour_cpu: int | None
    neighbours: int
    plan: FieldPlan


def _observe(answer: tuple[Any, float | None], record: dict, figures: RateFigures, send_times: list[float]) -> None:
    observation, waited = answer
    figures.runqueue_wait_s.append(waited)
    sent = record["content_times"]
    figures.ttft_overhead_s.append(observation.content_times[0] - sent[0])
    truth = (sent[-1] - sent[0]) / (len(sent) - 1)
    figures.tpot_error_pct.append(math.inf if observation.tpot_s is None else
                                  abs(observation.tpot_s - truth) / truth * 100)
    figures.cpu_per_chunk_s.append(observation.cpu_s / len(sent))
    send_times.extend(done - at for at, done in zip(sent, record["content_done"]))


def _phase(srv: RefServer, clients: list[ClientProcess], requests: int, tokens: int, itl_s: float,
           figures: dict[str, RateFigures], send_times: list[float], step: Callable[[], None]) -> None:
    srv.configure(itl_s=itl_s, responses=[{"tokens": tokens}])
    srv.reset()
    order = []
    for _ in range(requests):
        for client in clients:
            order.append((client.name, client.request(srv.url, tokens)))
            step()
    for (name, observation), record in zip(order, srv.log(), strict=True):
        _observe(observation, record, figures[name], send_times)


def _loadavg() -> tuple[float, float, float] | None:
    try:
        return os.getloadavg()
    except OSError:
        return None


def measure_field(plan: FieldPlan = FieldPlan(), specs: tuple[ClientSpec, ...] = DEFAULT_CLIENTS,
                  neighbours: int = 1, neighbour_cpu: int | None = -1,
                  step: Callable[[], None] = lambda: None) -> FieldResult:
    """Run every client in `specs` interleaved under field conditions; `neighbour_cpu=-1` means the last CPU."""
    cpu = last_cpu() if neighbour_cpu == -1 else neighbour_cpu
    load_before = _loadavg()
    slow = {spec.name: RateFigures() for spec in specs}
    fast = {spec.name: RateFigures() for spec in specs}
    send_times: list[float] = []
    clients: list[ClientProcess] = []
    busy = [Neighbour(cpu) for _ in range(neighbours)]
    try:
        for neighbour in busy:
            neighbour.__enter__()
        with RefServer(responses=[{"tokens": plan.slow_tokens}], ttft_s=plan.ttft_s, itl_s=0.010,
                       timings=False) as srv:
            clients = [ClientProcess(spec) for spec in specs]
            for client in clients:  # connect and warm up outside the measurement
                client.request(srv.url, None)
            _phase(srv, clients, plan.slow_requests, plan.slow_tokens, 0.010, slow, send_times, step)
            _phase(srv, clients, plan.fast_requests, plan.fast_tokens, 0.0005, fast, send_times, step)
    finally:
        for client in clients:
            client.close()
        for neighbour in busy:
            neighbour.__exit__()
    send_p99 = percentile(send_times, 99)
    return FieldResult(slow, fast, None if send_p99 is None else send_p99 * 1e3, load_before, _loadavg(), cpu,
                       neighbours, plan)


# ---- verdict -------------------------------------------------------------

@dataclass
class FieldCheck:
    label: str
    passed: bool
    detail: str


TTFT_P99_LIMIT_MS = 1.0
CPU_RATIO_LIMIT = 0.6


def field_verdict(result: FieldResult, ours: str = "benchpack", baseline: str = "aiohttp") -> list[FieldCheck]:
    slow = {name: figures.summary() for name, figures in result.slow.items()}
    fast = {name: figures.summary() for name, figures in result.fast.items()}
    checks = []
    p99 = slow[ours]["ttft_p99_ms"]
    checks.append(FieldCheck(f"TTFT overhead p99 @ 10 ms/token ≤ {TTFT_P99_LIMIT_MS:g} ms",
                             p99 is not None and p99 <= TTFT_P99_LIMIT_MS, f"{p99:.3f} ms"))
    if baseline in slow:
        theirs = slow[baseline]["ttft_p99_ms"]
        checks.append(FieldCheck(f"TTFT overhead p99 @ 10 ms/token ≤ {baseline}'s", p99 <= theirs,
                                 f"{p99:.3f} vs {theirs:.3f} ms"))
        for label, table in (("10 ms", slow), ("0.5 ms", fast)):
            mine, other = table[ours]["cpu_per_chunk_us"], table[baseline]["cpu_per_chunk_us"]
            checks.append(FieldCheck(f"CPU per chunk @ {label}/token ≤ {CPU_RATIO_LIMIT:g}× {baseline}'s",
                                     mine <= CPU_RATIO_LIMIT * other,
                                     f"{mine:.1f} vs {other:.1f} µs ({mine / other:.2f}×)"))
    return checks
