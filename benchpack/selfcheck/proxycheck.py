"""What the measuring proxy adds to an agent's latency: the same streamed requests direct and through it.

    python -m benchpack.selfcheck.proxycheck [--requests N]

Like `selftest`, against the scripted endpoint (`refserver`), whose log
holds the `perf_counter()` reading taken just before it wrote each token:
a client's *TTFT overhead* is when its first content chunk arrived minus
when the server wrote it. The client is benchpack's own `openai-chat`
adapter, in this process (the agent's place); the proxy runs in a process
of its own (the runner's place: during an agent session the runner does
nothing but relay). Requests alternate direct / proxied, so both see the
same machine noise; the proxy's *added latency* is the proxied overhead
minus the direct one, at the median and at p99. TPOT error at 10 ms per
token is measured both ways too. docs/agents.md publishes the figures.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from benchpack.measurement.stats import median, percentile
from benchpack.refserver.server import RefServer
from benchpack.selfcheck.selftest import BenchpackClient, _tpot_error_pct, realtime_priority


TARGET_P99_MS = 1.0  # the proxy's added TTFT latency at p99 (issue 29)


def passes(figures: dict) -> bool:
    return figures["added_ttft_p99_ms"] <= TARGET_P99_MS


class ProxyProcess:
    """`python -m benchpack.agents.proxy` in a child process; stopped by closing its standard input."""

    def __init__(self, endpoint: str, turns: Path) -> None:
        self.process = subprocess.Popen([sys.executable, "-m", "benchpack.agents.proxy", endpoint, str(turns)],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = self.process.stdout.readline()
        if not line.startswith("listening on "):
            self.close()
            raise RuntimeError(f"the proxy did not start: {line!r}")
        self.url = line.split(" ", 2)[2].strip()

    def close(self) -> None:
        try:
            self.process.stdin.close()
            self.process.wait(10)
        except (OSError, subprocess.TimeoutExpired):
            self.process.kill()
            self.process.wait()


def measure(requests: int = 200, slow_requests: int = 5, slow_tokens: int = 40, isolated: bool = True) -> dict:
    """Figures in ms / %: direct and proxied TTFT overhead (p50, p99), the proxy's added latency, TPOT error.

    As `selftest` does, the three processes run at real-time priority where permitted (`isolated`): the
    figure is the proxy's own cost, not a wake-up that waited behind someone else's process.
    """
    client = BenchpackClient()
    direct, proxied, tpot_direct, tpot_proxied = [], [], [], []
    with tempfile.TemporaryDirectory(prefix="benchpack-proxycheck-") as tmp:
        with RefServer(responses=[{"tokens": 4}], ttft_s=0.005, itl_s=0.001, timings=False) as srv:
            proxy = ProxyProcess(srv.openai_url, Path(tmp) / "agent-turns.jsonl")
            pids = [0, srv.process.pid, proxy.process.pid]
            priority = isolated and realtime_priority(pids, True)
            try:
                for url in (srv.openai_url, proxy.url):  # connect and warm up outside the measurement
                    client.request(url, None)
                srv.reset()
                order = []
                for _ in range(requests):
                    order.append((direct, client.request(srv.openai_url, 4)))
                    order.append((proxied, client.request(proxy.url, 4)))
                for (into, obs), record in zip(order, srv.log(), strict=True):
                    into.append(obs.content_times[0] - record["content_times"][0])
                srv.configure(itl_s=0.010, responses=[{"tokens": slow_tokens}])
                srv.reset()
                order = []
                for _ in range(slow_requests):
                    order.append((tpot_direct, client.request(srv.openai_url, slow_tokens)))
                    order.append((tpot_proxied, client.request(proxy.url, slow_tokens)))
                for (into, obs), record in zip(order, srv.log(), strict=True):
                    into.append(_tpot_error_pct(obs, record))
            finally:
                realtime_priority(pids, False)
                proxy.close()
                client.close()
            turns = len((Path(tmp) / "agent-turns.jsonl").read_text().splitlines())
    ms = lambda v: None if v is None else round(v * 1e3, 4)  # noqa: E731
    figures = {
        "requests": requests,
        "real_time_priority": bool(priority),
        "turn_rows": turns,
        "direct_ttft_overhead_p50_ms": ms(median(direct)),
        "direct_ttft_overhead_p99_ms": ms(percentile(direct, 99)),
        "proxied_ttft_overhead_p50_ms": ms(median(proxied)),
        "proxied_ttft_overhead_p99_ms": ms(percentile(proxied, 99)),
        "tpot_error_10ms_direct_pct": round(median(tpot_direct), 4),
        "tpot_error_10ms_proxied_pct": round(median(tpot_proxied), 4),
    }
    figures["added_ttft_p50_ms"] = round(figures["proxied_ttft_overhead_p50_ms"] - figures["direct_ttft_overhead_p50_ms"], 4)
    figures["added_ttft_p99_ms"] = round(figures["proxied_ttft_overhead_p99_ms"] - figures["direct_ttft_overhead_p99_ms"], 4)
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchpack.selfcheck.proxycheck", description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=200)
    args = parser.parse_args(argv)
    print(json.dumps(measure(args.requests), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
