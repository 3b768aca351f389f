"""The plain client loops of the side-by-side bench (bench/sidebyside.py), each run as a process of its own.

    python bench/peers/loops.py aiohttp|httpx URL --requests N --concurrency C --max-tokens T --out FILE

`aiohttp` is vLLM `bench serve`'s client shape (one ClientSession, a task
per request, `async for chunk in response.content`, perf_counter readings);
`httpx` the loop most benchmark scripts use (httpx.Client.stream +
iter_lines, GuideLLM's stack before 0.3), a thread per stream. Each request's prompt
starts with a nonce line in benchpack's cold-prompt form
(`[nonce <20 digits>]`), so the bench pairs it with the scripted server's
own record. One JSON line per request goes to FILE: the nonce, TTFT, TPOT
(first to last content chunk / (chunks - 1)), the content chunks seen, and
the process CPU (`time.process_time()`) at the first send and after the
last response (steady-state CPU).

Imports are at the top, as in the tools these loops stand for: the process's
whole cost is part of what the bench measures.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time


def nonce_prompt() -> tuple[str, str]:
    nonce = f"{random.getrandbits(64):020d}"
    return nonce, f"[nonce {nonce}]\nsay something"


def body(prompt: str, max_tokens: int) -> dict:
    return {"model": "ref", "messages": [{"role": "user", "content": prompt}], "max_tokens": max_tokens,
            "stream": True, "stream_options": {"include_usage": True}}


def content_of(line: bytes | str) -> bool | None:
    """True for a data line with non-empty content, False for another data line, None at [DONE]/non-data."""
    if isinstance(line, bytes):
        line = line.decode()
    line = line.strip()
    if not line.startswith("data:"):
        return False
    data = line[5:].strip()
    if data == "[DONE]":
        return None
    chunk = json.loads(data)
    choices = chunk.get("choices") or []
    return bool(choices and (choices[0].get("delta") or {}).get("content"))


def record(nonce: str, start: float, times: list[float], error: str | None = None) -> dict:
    tpot = (times[-1] - times[0]) / (len(times) - 1) if len(times) > 1 else None
    return {"nonce": nonce, "ttft_s": times[0] - start if times else None, "tpot_s": tpot, "chunks": len(times),
            "error": error}


def run_aiohttp(url: str, requests: int, concurrency: int, max_tokens: int) -> tuple[list[dict], float, float]:
    import asyncio

    import aiohttp

    async def one(session, semaphore, results):
        async with semaphore:
            nonce, prompt = nonce_prompt()
            times: list[float] = []
            start = time.perf_counter()
            try:
                async with session.post(url, json=body(prompt, max_tokens)) as response:
                    async for line in response.content:
                        now = time.perf_counter()
                        if content_of(line):
                            times.append(now)
            except Exception as exc:  # noqa: BLE001 - reported per request
                results.append(record(nonce, start, times, f"{type(exc).__name__}: {exc}"))
                return
            results.append(record(nonce, start, times))

    async def main():
        results: list[dict] = []
        semaphore = asyncio.Semaphore(concurrency)
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=600),
                                         connector=aiohttp.TCPConnector(limit=0)) as session:
            cpu0 = time.process_time()
            await asyncio.gather(*(one(session, semaphore, results) for _ in range(requests)))
            cpu1 = time.process_time()
        return results, cpu0, cpu1

    return asyncio.run(main())


def run_httpx(url: str, requests: int, concurrency: int, max_tokens: int) -> tuple[list[dict], float, float]:
    import threading

    import httpx

    results: list[dict] = []
    lock = threading.Lock()
    todo = list(range(requests))
    client = httpx.Client(timeout=600, limits=httpx.Limits(max_connections=None, max_keepalive_connections=None))

    def worker():
        while True:
            with lock:
                if not todo:
                    return
                todo.pop()
            nonce, prompt = nonce_prompt()
            times: list[float] = []
            start = time.perf_counter()
            try:
                with client.stream("POST", url, json=body(prompt, max_tokens)) as response:
                    for line in response.iter_lines():
                        now = time.perf_counter()
                        if content_of(line):
                            times.append(now)
                result = record(nonce, start, times)
            except Exception as exc:  # noqa: BLE001
                result = record(nonce, start, times, f"{type(exc).__name__}: {exc}")
            with lock:
                results.append(result)

    threads = [threading.Thread(target=worker) for _ in range(min(concurrency, requests))]
    cpu0 = time.process_time()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    cpu1 = time.process_time()
    client.close()
    return results, cpu0, cpu1


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("client", choices=("aiohttp", "httpx"))
    parser.add_argument("url")
    parser.add_argument("--requests", type=int, default=100)
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--max-tokens", type=int, default=20)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    run = run_aiohttp if args.client == "aiohttp" else run_httpx
    results, cpu0, cpu1 = run(args.url, args.requests, args.concurrency, args.max_tokens)
    with open(args.out, "w", encoding="utf-8") as out:
        for result in results:
            out.write(json.dumps(result) + "\n")
        out.write(json.dumps({"steady_cpu_s": cpu1 - cpu0}) + "\n")
    return 0 if all(r["error"] is None for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
