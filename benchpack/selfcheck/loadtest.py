"""Client accuracy under many concurrent streams, against the scripted endpoint.

The reference server (its own process) serves N streams at once, each on
its own script (TTFT and token spacing per stream), and logs when every
token really went out. A client under test sends the N requests at once and
reports, per request, the arrival time of every content chunk. Because both
processes read the same monotonic clock, the difference is the client's
error for that chunk, with N streams competing for it:

* TTFT overhead: client first-content time − server send time of that chunk;
* per-stream TPOT error: |client TPOT − the server's own token spacing| /
  the server's spacing, TPOT taken first to last content chunk;
* chunk delivery: client arrival − server send, over every chunk;
* how well the server kept its script (send time − planned time) and how
  long its writes took: the floor under everything the client is charged.

Requests carry a nonce (`load-<round>-<stream>`) in the prompt, so server
records and client results pair up whatever order they arrive in.

A client is any callable `client(url, bodies) -> list[StreamTimes]` that
sends all `bodies` (chat-completions JSON, streamed) concurrently and
returns, in the same order, what it saw. `aiohttp_client` is the plain
aiohttp loop (vLLM `bench serve`'s shape) used as the baseline;
`bench/concurrency.py` prints the figures.
"""

from __future__ import annotations

import asyncio
import random
import statistics
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from benchpack.refserver.server import RefServer
from benchpack.selfcheck.selftest import aiohttp_content_times, percentile

perf_counter = time.perf_counter


@dataclass
class StreamTimes:
    """One streamed request as the client saw it: arrival time of every content chunk, and usage's output count."""

    content_times: list[float]
    output_tokens: int | None = None
    error: str | None = None


Client = Callable[[str, list[dict]], list[StreamTimes]]


@dataclass(frozen=True)
class LoadPlan:
    streams: int = 64
    rounds: int = 3               # measured rounds of `streams` concurrent requests (after one warm-up round)
    tokens: int = 40
    lockstep: bool = False        # every stream the same script, tokens due at the same instants (a batching server)
    ttft_s: tuple[float, float] = (0.020, 0.200)  # per-stream TTFT drawn from this range (lockstep: the low end)
    itl_s: tuple[float, float] = (0.010, 0.040)   # per-stream token spacing drawn from this range
    seed: int = 12

    def scripts(self) -> list[dict]:
        """Each stream's own script: a `responses` entry for the reference server."""
        rng = random.Random(self.seed)
        if self.lockstep:
            return [{"tokens": self.tokens, "ttft_s": self.ttft_s[0], "itl_s": self.itl_s[0]}] * self.streams
        return [{"tokens": self.tokens, "ttft_s": round(rng.uniform(*self.ttft_s), 4),
                 "itl_s": round(rng.uniform(*self.itl_s), 4)} for _ in range(self.streams)]


def request_body(nonce: str, tokens: int) -> dict:
    return {"model": "ref", "messages": [{"role": "user", "content": f"{nonce} say something"}], "max_tokens": tokens,
            "stream": True, "stream_options": {"include_usage": True}}


def _nonce(record: dict) -> str | None:
    messages = (record.get("body") or {}).get("messages") or [{}]
    words = str(messages[0].get("content", "")).split()
    return words[0] if words and words[0].startswith("load-") else None


@dataclass
class LoadFigures:
    ttft_overhead_s: list[float] = field(default_factory=list)
    tpot_error_pct: list[float] = field(default_factory=list)
    chunk_delivery_s: list[float] = field(default_factory=list)
    server_late_s: list[float] = field(default_factory=list)
    server_write_s: list[float] = field(default_factory=list)
    client_cpu_s: float = 0.0
    chunks: int = 0
    failures: list[str] = field(default_factory=list)

    def summary(self) -> dict[str, float | int | None]:
        def ms(value: float | None) -> float | None:
            return None if value is None else value * 1e3

        return {
            "streams_measured": len(self.ttft_overhead_s),
            "ttft_overhead_median_ms": ms(statistics.median(self.ttft_overhead_s)) if self.ttft_overhead_s else None,
            "ttft_overhead_p99_ms": ms(percentile(self.ttft_overhead_s, 99)),
            "tpot_error_median_pct": statistics.median(self.tpot_error_pct) if self.tpot_error_pct else None,
            "tpot_error_p99_pct": percentile(self.tpot_error_pct, 99),
            "tpot_error_max_pct": max(self.tpot_error_pct, default=None),
            "chunk_delivery_p50_ms": ms(percentile(self.chunk_delivery_s, 50)),
            "chunk_delivery_p99_ms": ms(percentile(self.chunk_delivery_s, 99)),
            "server_late_p50_ms": ms(percentile(self.server_late_s, 50)),
            "server_late_p99_ms": ms(percentile(self.server_late_s, 99)),
            "server_write_p99_ms": ms(percentile(self.server_write_s, 99)),
            "client_cpu_per_chunk_us": self.client_cpu_s / self.chunks * 1e6 if self.chunks else None,
            "failures": len(self.failures),
        }


def score_round(records: list[dict], nonces: list[str], seen: list[StreamTimes], figures: LoadFigures) -> None:
    """Pair the server's records with what the client saw, by nonce, and add the figures."""
    by_nonce = {_nonce(record): record for record in records}
    for nonce, times in zip(nonces, seen, strict=True):
        record = by_nonce.get(nonce)
        if record is None or times.error or not times.content_times:
            figures.failures.append(f"{nonce}: {times.error or 'no content'}" if record else f"{nonce}: not served")
            continue
        sent = record["content_times"]
        if len(times.content_times) != len(sent):
            figures.failures.append(f"{nonce}: client saw {len(times.content_times)} content chunks, server sent {len(sent)}")
            continue
        figures.ttft_overhead_s.append(times.content_times[0] - sent[0])
        figures.chunk_delivery_s.extend(arrived - out for arrived, out in zip(times.content_times, sent))
        if len(sent) > 1:
            truth = (sent[-1] - sent[0]) / (len(sent) - 1)
            client = (times.content_times[-1] - times.content_times[0]) / (len(sent) - 1)
            figures.tpot_error_pct.append(abs(client - truth) / truth * 100)
        figures.server_late_s.extend(out - planned for out, planned in zip(sent, record["content_planned"]))
        figures.server_write_s.extend(done - out for out, done in zip(sent, record["content_done"]))
        figures.chunks += len(sent)


def measure_load(client: Client, plan: LoadPlan = LoadPlan(), progress: Callable[[str], None] = lambda _: None) -> LoadFigures:
    """Run `plan.rounds` rounds of `plan.streams` concurrent streams through `client` (one warm-up round first)."""
    figures = LoadFigures()
    scripts = plan.scripts()
    with RefServer(responses=scripts, timings=False) as srv:
        for round_number in range(plan.rounds + 1):
            nonces = [f"load-{round_number}-{i}" for i in range(plan.streams)]
            bodies = [request_body(nonce, plan.tokens) for nonce in nonces]
            srv.reset()  # also rewinds `responses`: the streams take the scripts in the order their requests arrive
            cpu = time.process_time()
            seen = client(srv.openai_url, bodies)
            cpu = time.process_time() - cpu
            if round_number == 0:
                continue  # warm-up: connections opened, code paths warm
            figures.client_cpu_s += cpu
            score_round(srv.log(), nonces, seen, figures)
            progress(f"round {round_number}/{plan.rounds}: {len(figures.ttft_overhead_s)} streams measured")
    return figures


# ---- benchpack's concurrency lane ------------------------------------------

def lane_client(kernel_stamps: bool = True) -> Client:
    """benchpack's concurrency lane as `benchpack run` drives it: one openai-chat adapter, a worker thread per
    stream (`benchpack.lanes.runs._parallel`), each request in its own timed window, the bodies read by the
    level's one shared reader after each worker's first reads (`streamreader.shared_reads`, bound in the
    workers, as `run_level`). `kernel_stamps=False`
    times every read in user space, as on a system without them (benchpack.adapters.rxstamp): the
    bench's side-by-side baseline."""
    from benchpack.adapters import streamreader
    from benchpack.adapters.base import AdapterRequest
    from benchpack.adapters.fasttransport import FastHTTPTransport
    from benchpack.adapters.openai_chat import OpenAIChatAdapter
    from benchpack.adapters.transport import LeanClient
    from benchpack.lanes.runs import _parallel

    adapter = OpenAIChatAdapter(LeanClient(FastHTTPTransport(kernel_stamps=kernel_stamps)))

    def client(url: str, bodies: list[dict]) -> list[StreamTimes]:
        seen: list[StreamTimes | None] = [None] * len(bodies)

        def job(index: int, body: dict) -> Callable[[], None]:
            request = AdapterRequest(model=body["model"], prompt=body["messages"][0]["content"], endpoint=url,
                                     max_tokens=body["max_tokens"], stream=True, temperature=None)

            def run() -> None:
                result, trace = adapter.run_traced(request)
                seen[index] = StreamTimes(list(trace.content_times), result.tokens.get("output"),
                                          None if result.ok else result.error)
            return run

        with streamreader.shared_reads() as reader:
            _parallel([job(i, body) for i, body in enumerate(bodies)], len(bodies), reader=reader)
        return [times or StreamTimes([], None, "no result") for times in seen]

    client.close = adapter.close  # type: ignore[attr-defined]
    return client


# ---- the baseline: a plain aiohttp loop ----------------------------------

def aiohttp_client() -> Client:
    """vLLM `bench serve`'s shape: one aiohttp session, a task per request, `async for line in response.content`.

    Returns a client that keeps its event loop and session (and so its
    connections) across calls; call `client.close()` when done.
    """
    import aiohttp

    loop = asyncio.new_event_loop()

    async def make_session() -> Any:
        return aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=600),
                                     connector=aiohttp.TCPConnector(limit=0))

    session = loop.run_until_complete(make_session())

    async def one(url: str, body: dict) -> StreamTimes:
        try:
            async with session.post(url, json=body) as response:
                times, output = await aiohttp_content_times(response)
        except Exception as exc:  # noqa: BLE001 - reported per stream
            return StreamTimes([], None, f"{type(exc).__name__}: {exc}")
        return StreamTimes(times, output)

    async def run_all(url: str, bodies: list[dict]) -> list[StreamTimes]:
        return list(await asyncio.gather(*(one(url, body) for body in bodies)))

    def client(url: str, bodies: list[dict]) -> list[StreamTimes]:
        return loop.run_until_complete(run_all(url, bodies))

    def close() -> None:
        loop.run_until_complete(session.close())
        loop.close()

    client.close = close  # type: ignore[attr-defined]
    return client
