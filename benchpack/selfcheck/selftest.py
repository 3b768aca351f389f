"""How accurate are the runner's own numbers? Measured, not asserted.

The reference server (its own process) sends tokens on a known schedule and
records `time.perf_counter()` just before each write; on Linux that clock is
CLOCK_MONOTONIC, shared across processes, so the client's reading for the
same chunk can be subtracted directly. Three clients are measured side by
side in the same run, requests interleaved so they see the same machine
noise:

* `benchpack`   — the openai-chat adapter exactly as `benchpack run` uses it;
* `benchpack anthropic-messages`, `benchpack openai-responses` — the other
  streaming adapters, against the same server's `/v1/messages` and
  `/v1/responses` event streams (held to the same latency targets);
* `httpx lines` — a plain httpx loop (`iter_lines` + `json.loads`);
* `aiohttp`     — a plain aiohttp loop (`async for line in resp.content`),
  the shape vLLM's `bench serve` uses.

Figures: TTFT overhead (client first-content time minus the server's send
time of that chunk; median and p99), TPOT error against the server's own
token spacing at 10 ms and 0.5 ms per token, and client CPU per streamed
chunk (thread CPU time over the request / chunks sent).
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import httpx

from benchpack.adapters.base import AdapterRequest
from benchpack.adapters import get_adapter
from benchpack.measurement.stats import percentile as stats_percentile
from benchpack.refserver.server import RefServer

perf_counter = time.perf_counter
process_time = time.process_time  # the whole client process: any helper thread counts too

# The adapters measured beside openai-chat ("benchpack"), each as "benchpack <adapter id>".
OTHER_ADAPTERS = ("anthropic-messages", "openai-responses")
BASELINES = ("httpx lines", "aiohttp")
CLIENTS = ("benchpack", *BASELINES, *(f"benchpack {a}" for a in OTHER_ADAPTERS))
CHAT_PATH = "/v1/chat/completions"


@dataclass(frozen=True)
class Plan:
    # p99 needs enough samples to be a percentile rather than the maximum:
    # with 200, the p99 sits between the 2nd and 3rd largest.
    ttft_requests: int = 200  # per client, short replies
    ttft_s: float = 0.005
    slow_requests: int = 3    # per client, 10 ms per token
    slow_tokens: int = 40
    fast_requests: int = 6    # per client, 0.5 ms per token
    fast_tokens: int = 300

    def total_requests(self, clients: int) -> int:
        return clients * (self.ttft_requests + self.slow_requests + self.fast_requests)


QUICK = Plan()
THOROUGH = Plan(ttft_requests=1000, slow_requests=8, slow_tokens=60, fast_requests=20, fast_tokens=400)


@dataclass
class Observation:
    """One streamed request as one client saw it."""

    content_times: list[float]
    output_tokens: int | None
    cpu_s: float
    tpot_s: float | None  # as the client itself reports it


# ---- clients ------------------------------------------------------------

class BenchpackClient:
    """An adapter exactly as `benchpack run` uses it; `url` is the server's base URL (the adapter adds its path)."""

    def __init__(self, adapter_id: str = "openai-chat") -> None:
        self.adapter = get_adapter(adapter_id)
        self.name = "benchpack" if adapter_id == "openai-chat" else f"benchpack {adapter_id}"

    def request(self, url: str, max_tokens: int | None) -> Observation:
        req = AdapterRequest(model="ref", prompt="selftest prompt", endpoint=url, temperature=0.0,
                             max_tokens=max_tokens, stream=True, timeout_s=60)
        cpu = process_time()
        result, trace = self.adapter.run_traced(req)
        cpu = process_time() - cpu
        if not result.ok:
            raise RuntimeError(f"benchpack adapter failed against the reference server: {result.error}")
        return Observation(trace.content_times, result.tokens["output"], cpu, result.timing["tpot_s"])

    def close(self) -> None:
        self.adapter.close()


def _body(max_tokens: int | None) -> dict:
    return {"model": "ref", "messages": [{"role": "user", "content": "selftest prompt"}], "temperature": 0.0,
            "max_tokens": max_tokens, "stream": True, "stream_options": {"include_usage": True}}


def _client_tpot(times: list[float], output: int | None) -> float | None:
    if output is None or output < 2 or len(times) < 2:
        return None
    return (times[-1] - times[0]) / (output - 1)


class HttpxLinesClient:
    """The loop most hand-written benchmark scripts use."""

    name = "httpx lines"

    def __init__(self) -> None:
        self.client = httpx.Client(timeout=60)

    def request(self, url: str, max_tokens: int | None) -> Observation:
        url += CHAT_PATH
        times: list[float] = []
        output = None
        cpu = process_time()
        with self.client.stream("POST", url, json=_body(max_tokens)) as response:
            for line in response.iter_lines():
                now = perf_counter()
                if not line.startswith("data:"):
                    continue
                data = line[5:].strip()
                if data == "[DONE]":
                    break
                chunk = json.loads(data)
                if chunk.get("usage"):
                    output = chunk["usage"]["completion_tokens"]
                choices = chunk.get("choices")
                if choices and choices[0]["delta"].get("content"):
                    times.append(now)
        cpu = process_time() - cpu
        return Observation(times, output, cpu, _client_tpot(times, output))

    def close(self) -> None:
        self.client.close()


class AiohttpClient:
    """vLLM `bench serve`'s loop: aiohttp, one line at a time."""

    name = "aiohttp"

    def __init__(self) -> None:
        import aiohttp

        self.loop = asyncio.new_event_loop()
        self.session = self.loop.run_until_complete(self._session(aiohttp))

    @staticmethod
    async def _session(aiohttp: Any) -> Any:
        return aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60))

    async def _request(self, url: str, max_tokens: int | None) -> tuple[list[float], int | None]:
        async with self.session.post(url + CHAT_PATH, json=_body(max_tokens)) as response:
            return await aiohttp_content_times(response)

    def request(self, url: str, max_tokens: int | None) -> Observation:
        cpu = process_time()
        times, output = self.loop.run_until_complete(self._request(url, max_tokens))
        cpu = process_time() - cpu
        return Observation(times, output, cpu, _client_tpot(times, output))

    def close(self) -> None:
        self.loop.run_until_complete(self.session.close())
        self.loop.close()


async def aiohttp_content_times(response: Any) -> tuple[list[float], int | None]:
    """The plain aiohttp loop's reading of a chat-completions stream: content chunk arrival times, usage's output count."""
    times: list[float] = []
    output = None
    async for raw in response.content:
        now = perf_counter()
        line = raw.strip()
        if not line.startswith(b"data:"):
            continue
        data = line[5:].strip()
        if data == b"[DONE]":
            break
        chunk = json.loads(data)
        if chunk.get("usage"):
            output = chunk["usage"]["completion_tokens"]
        choices = chunk.get("choices")
        if choices and choices[0]["delta"].get("content"):
            times.append(now)
    return times, output


def make_clients() -> list:
    clients: list = [BenchpackClient(), HttpxLinesClient()]
    try:
        clients.append(AiohttpClient())
    except ImportError:  # aiohttp is a dev dependency; the baseline is skipped without it
        pass
    return clients + [BenchpackClient(adapter_id) for adapter_id in OTHER_ADAPTERS]


# ---- measurement --------------------------------------------------------

# One percentile definition for the whole project: measurement.stats' (linear
# interpolation between closest ranks, so p50 is the median).
percentile = stats_percentile


@dataclass
class ClientFigures:
    ttft_overhead_s: list[float] = field(default_factory=list)
    tpot_err_slow_pct: list[float] = field(default_factory=list)
    tpot_err_fast_pct: list[float] = field(default_factory=list)
    cpu_per_chunk_s: list[float] = field(default_factory=list)

    def summary(self) -> dict[str, float | None]:
        med = lambda v: statistics.median(v) if v else None  # noqa: E731
        return {
            "ttft_overhead_median_ms": _scale(med(self.ttft_overhead_s), 1e3),
            "ttft_overhead_p99_ms": _scale(percentile(self.ttft_overhead_s, 99), 1e3),
            "tpot_error_10ms_pct": med(self.tpot_err_slow_pct),
            "tpot_error_0_5ms_pct": med(self.tpot_err_fast_pct),
            "cpu_per_chunk_us": _scale(med(self.cpu_per_chunk_s), 1e6),
        }


def _scale(value: float | None, factor: float) -> float | None:
    return None if value is None else value * factor


def _tpot_error_pct(obs: Observation, record: dict) -> float:
    sent = record["content_times"]
    truth = (sent[-1] - sent[0]) / (len(sent) - 1)
    if obs.tpot_s is None:
        return math.inf
    return abs(obs.tpot_s - truth) / truth * 100


def _phase(srv: RefServer, clients: list, requests: int, max_tokens: int, step: Callable[[], None],
           take: Callable[[Any, Observation, dict], None]) -> None:
    # Interleaved so every client sees the same stretch of machine noise.
    srv.reset()
    order = []
    for _ in range(requests):
        for client in clients:
            order.append((client, client.request(srv.url, max_tokens)))
            step()
    for (client, obs), record in zip(order, srv.log(), strict=True):
        take(client, obs, record)


def _threads(pid: int) -> list[int]:
    """Every thread of process `pid` (0: this process); the process id alone where /proc is unavailable."""
    try:
        return [int(tid) for tid in os.listdir(f"/proc/{pid or os.getpid()}/task")]
    except OSError:
        return [pid]


def realtime_priority(pids: list[int], on: bool) -> bool:
    """SCHED_FIFO for every thread of `pids` (0: this process) when `on`, normal priority otherwise; False if not permitted.

    Used for the latency phases only (see `measure`). It needs root or
    CAP_SYS_NICE; without it those phases run at normal priority. The
    policy is per thread, and a thread inherits its creator's, so the
    reference server's connection threads must be set (and reset) too:
    one left at SCHED_FIFO raised the later CPU phase's figure by ~30 %.
    """
    policy, param = (os.SCHED_FIFO, os.sched_param(1)) if on else (os.SCHED_OTHER, os.sched_param(0))
    try:
        for pid in pids:
            for tid in _threads(pid):
                try:
                    os.sched_setscheduler(tid, policy, param)
                except ProcessLookupError:  # the thread ended meanwhile
                    pass
    except OSError:
        if on:
            realtime_priority(pids, False)
        return False
    return True


def measure(plan: Plan = QUICK, step: Callable[[], None] = lambda: None,
            clients: list | None = None, announce: Callable[[str], None] | None = None,
            isolated: bool = True) -> dict[str, ClientFigures]:
    """Figures for every client; `announce` hears how the run was isolated (stderr by default).

    The latency phases (TTFT, TPOT at 10 ms) run with this process and the
    reference server at real-time priority when `isolated` and permitted:
    the figures are meant to show the clients' own overhead, and on a
    shared machine a wake-up can otherwise wait milliseconds behind someone
    else's process, for every client alike. The 0.5 ms phase, which also
    measures CPU per chunk, runs at normal priority as `benchpack run` does
    (real-time priority raises every client's CPU per chunk there: woken
    tasks preempt others and land on cold caches). CPU pinning was tried
    and left out: on a 2-CPU machine shared with other work it made p99
    worse, because the kernel can no longer move a woken client to the
    idle CPU.
    """
    clients = clients if clients is not None else make_clients()
    figures = {client.name: ClientFigures() for client in clients}
    announce = announce or (lambda text: print(f"selftest: {text}", file=sys.stderr, flush=True))
    pids = [0]
    try:
        with RefServer(responses=[{"tokens": 4}], ttft_s=plan.ttft_s, itl_s=0.001, timings=False) as srv:
            pids.append(srv.process.pid)
            if isolated and realtime_priority(pids, True):
                announce("TTFT and TPOT @ 10 ms phases at real-time priority (SCHED_FIFO, selftest only); "
                         "the 0.5 ms / CPU phase at normal priority")
            else:
                announce("every phase at normal priority" + (" (real-time priority not permitted)" if isolated else ""))
            for client in clients:  # connect and warm up outside the measurement
                client.request(srv.url, None)

            def ttft(client: Any, obs: Observation, record: dict) -> None:
                figures[client.name].ttft_overhead_s.append(obs.content_times[0] - record["content_times"][0])

            _phase(srv, clients, plan.ttft_requests, 4, step, ttft)

            srv.configure(itl_s=0.010, responses=[{"tokens": plan.slow_tokens}])
            _phase(srv, clients, plan.slow_requests, plan.slow_tokens, step,
                   lambda c, o, r: figures[c.name].tpot_err_slow_pct.append(_tpot_error_pct(o, r)))

            srv.configure(itl_s=0.0005, responses=[{"tokens": plan.fast_tokens}])
            realtime_priority(pids, False)

            def fast(client: Any, obs: Observation, record: dict) -> None:
                figures[client.name].tpot_err_fast_pct.append(_tpot_error_pct(obs, record))
                figures[client.name].cpu_per_chunk_s.append(obs.cpu_s / len(record["content_times"]))

            _phase(srv, clients, plan.fast_requests, plan.fast_tokens, step, fast)
    finally:
        realtime_priority(pids[:1], False)
        for client in clients:
            client.close()
    return figures


# ---- verdict ------------------------------------------------------------

@dataclass(frozen=True)
class Target:
    label: str
    metric: str
    limit: float | None  # absolute ceiling; None for a comparison-only target
    unit: str


TARGETS = (
    Target("TTFT overhead, median", "ttft_overhead_median_ms", 0.3, "ms"),
    Target("TTFT overhead, p99", "ttft_overhead_p99_ms", 1.0, "ms"),
    Target("TPOT error @ 10 ms/token", "tpot_error_10ms_pct", 0.5, "%"),
    Target("TPOT error @ 0.5 ms/token", "tpot_error_0_5ms_pct", 2.0, "%"),
    Target("client CPU per chunk", "cpu_per_chunk_us", 30.0, "µs"),
)
# Where benchpack must also beat every baseline measured in the same run.
BEAT_BASELINES = ("ttft_overhead_median_ms", "cpu_per_chunk_us")
# The other adapters are held to the latency targets (their events are bigger and named, so their CPU per
# chunk is shown, not held to openai-chat's ceiling).
ADAPTER_TARGETS = ("ttft_overhead_median_ms", "ttft_overhead_p99_ms", "tpot_error_10ms_pct", "tpot_error_0_5ms_pct")


@dataclass
class Check:
    label: str
    passed: bool
    detail: str


def verdict(summaries: dict[str, dict[str, float | None]]) -> list[Check]:
    ours = summaries["benchpack"]
    baselines = {name: s for name, s in summaries.items() if name in BASELINES}
    checks = []
    for target in TARGETS:
        value = ours[target.metric]
        ok = value is not None and value <= target.limit
        checks.append(Check(f"{target.label} ≤ {target.limit:g} {target.unit}", ok,
                            "no data" if value is None else f"{value:.3f} {target.unit}"))
    for adapter in OTHER_ADAPTERS:
        figures = summaries.get(f"benchpack {adapter}")
        for target in (t for t in TARGETS if figures is not None and t.metric in ADAPTER_TARGETS):
            value = figures[target.metric]
            ok = value is not None and value <= target.limit
            checks.append(Check(f"{adapter}: {target.label} ≤ {target.limit:g} {target.unit}", ok,
                                "no data" if value is None else f"{value:.3f} {target.unit}"))
    for metric in BEAT_BASELINES:
        label = next(t.label for t in TARGETS if t.metric == metric)
        value = ours[metric]
        others = {name: s[metric] for name, s in baselines.items() if s[metric] is not None}
        ok = value is not None and bool(others) and all(value < other for other in others.values())
        detail = ", ".join(f"{name} {other:.3f}" for name, other in others.items()) or "no baseline"
        checks.append(Check(f"{label} lower than every baseline", ok, detail))
    return checks


# ---- a tiny pack end to end ---------------------------------------------

SELFTEST_PACK = """\
[pack]
id = "selftest"
version = "0.1.0"
description = "benchpack selftest: the runner end to end against the reference server"

[defaults]
temperature = 0
max_tokens = 32
stream = true
warmup = 1
repetitions = 2

[[cases]]
id = "capital"
kind = "chat"
prompt = "What is the capital of France? Answer in one sentence."

[scoring]
mode = "contains"
expected = "Paris"
"""

SELFTEST_REPLY = "The capital of France is Paris."


def run_tiny_pack() -> Check:
    """Run SELFTEST_PACK through benchpack.run.runner and check the rows it wrote."""
    from benchpack.packs.loader import load_pack
    from benchpack.run.runner import RunOptions, run_pack

    with tempfile.TemporaryDirectory(prefix="benchpack-selftest-") as tmp, \
            RefServer(responses=[SELFTEST_REPLY], ttft_s=0.004, itl_s=0.001, cached_tokens=3) as srv:
        pack_dir = Path(tmp) / "pack"
        pack_dir.mkdir()
        (pack_dir / "benchpack.toml").write_text(SELFTEST_PACK, encoding="utf-8")
        outcome = run_pack(load_pack(pack_dir), RunOptions(adapter="openai-chat", model="ref",
                                                           endpoint=srv.openai_url, out=Path(tmp) / "out"))
        problems = _tiny_pack_problems(outcome.rows, len(srv.log()))
    return Check("tiny pack end to end (runner → run.jsonl)", not problems and outcome.all_ok,
                 "; ".join(problems) or f"{len(outcome.rows)} rows ok")


def _tiny_pack_problems(rows: list[dict], requests_served: int) -> list[str]:
    problems = []
    if len(rows) != 2:
        problems.append(f"expected 2 measured rows, got {len(rows)}")
    if requests_served != 3:
        problems.append(f"expected 3 requests (1 warmup + 2), server saw {requests_served}")
    words = len(SELFTEST_REPLY.split())
    for row in rows:
        where = f"repetition {row.get('repetition')}"
        if not row.get("ok"):
            problems.append(f"{where}: {row.get('error')}")
        tokens, timing = row.get("tokens") or {}, row.get("timing") or {}
        if tokens.get("output") != words or tokens.get("cached_prompt") != 3 or tokens.get("source") != "usage":
            problems.append(f"{where}: tokens {tokens}")
        if not all(isinstance(timing.get(k), float) for k in ("ttft_s", "ttfb_s", "tpot_s", "decode_tps")):
            problems.append(f"{where}: timing {timing}")
        if (row.get("scoring") or {}).get("passed") is not True:
            problems.append(f"{where}: scoring {row.get('scoring')}")
    return problems


# ---- a server that sends everything at once ------------------------------

BURST_REQUESTS = 3


def burst_check() -> Check:
    """Against a reference server that writes each reply in one burst (refserver `burst`): every row must
    say its tokens could not be placed — `tpot_s` null, TTFT marked an upper bound that the server's own
    send time does not contradict — and the summary must count them (docs/measurement.md, "What the reads
    could not see"). A row with `tpot_s: 0.0` here claims a spacing its reads never saw."""
    from benchpack.results.placement import placement_note

    label = "a reply sent in one burst: no TPOT, TTFT marked a bound"
    adapter = get_adapter("openai-chat")
    problems: list[str] = []
    rows = []
    try:
        with RefServer(responses=[{"tokens": 6}], ttft_s=0.004, itl_s=0.001, timings=False, burst=True) as srv:
            for i in range(BURST_REQUESTS):
                req = AdapterRequest(model="ref", prompt="selftest burst", endpoint=srv.openai_url,
                                     temperature=0.0, max_tokens=6, stream=True, timeout_s=60)
                result, trace = adapter.run_traced(req)
                record = srv.log()[-1]
                timing = result.timing
                placement = timing.get("placement") or {}
                if not result.ok:
                    problems.append(f"request {i + 1}: {result.error}")
                    continue
                rows.append({"ok": True, "timing": timing})
                if timing.get("tpot_s") is not None or placement.get("tpot") != "one_read":
                    problems.append(f"request {i + 1}: tpot_s {timing.get('tpot_s')}, placement {placement}")
                if placement.get("ttft") != "upper":
                    problems.append(f"request {i + 1}: TTFT not marked a bound ({placement})")
                sent = record["content_times"][0] - trace.start if record["content_times"] else None
                if sent is not None and timing.get("ttft_s") is not None and timing["ttft_s"] < sent:
                    problems.append(f"request {i + 1}: TTFT {timing['ttft_s'] * 1000:.2f} ms is before the server "
                                    f"sent the first token ({sent * 1000:.2f} ms)")
    finally:
        adapter.close()
    note = placement_note(rows)
    if rows and (note is None or f"{len(rows)} of {len(rows)}" not in note):
        problems.append(f"the summary does not count them: {note}")
    return Check(label, not problems and len(rows) == BURST_REQUESTS, "; ".join(problems) or note or "no rows")
