"""Does benchpack's decode rate match what a real llama-server says it did?

Sends the same streamed requests through benchpack's `openai-chat` adapter to
llama.cpp `llama-server` (SmolLM2-135M on CPU, started here unless
--endpoint is given) and compares, request by request:

- `decode_tps` (output / (wall_s - ttft_s)) with the server's own
  `timings.predicted_per_second` (goal: median ratio >= 0.97);
- the TPOT-derived rate 1 / tpot_s with the same server rate.

Both sides see the same tokens, so the ratio isolates what the client's
clock adds (network, SSE parsing, scheduling) from what the model costs.
Prompt caching is off (`cache_prompt: false`) so every request is cold and
alike. Prints a Markdown table; exit status 1 when the goal is missed.

    uv run python bench/real_server_decode.py [--reps 5] [--max-tokens 128]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

# Run as a script from anywhere: the server launcher lives with the tests.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchpack.adapters import AdapterRequest, get_adapter  # noqa: E402
from tests.realserver import MODEL_ALIAS, running_server  # noqa: E402

GOAL_RATIO = 0.97
STALE_CONNECTION_RETRIES: list[str] = []
PROMPTS = {
    "story": "Write a long story about a lighthouse keeper and a storm.",
    "explain": "Explain in detail how a bicycle works, part by part.",
    "list": "List as many fruits as you can, one per line, with a short description of each.",
}


def measure(endpoint: str, model: str, reps: int, max_tokens: int) -> list[dict]:
    adapter = get_adapter("openai-chat")
    rows = []
    for rep in range(reps + 1):  # rep 0 is a warmup: page-in, allocator, first connection
        for case, prompt in PROMPTS.items():
            request = AdapterRequest(
                model=model, prompt=prompt, endpoint=endpoint, temperature=0,
                max_tokens=max_tokens, stream=True, extra_body={"cache_prompt": False})
            result = adapter.run(request)
            if not result.ok and result.error.startswith("connection closed by"):
                # llama-server closes the connection a few ms after every
                # streamed response (no `Connection: close`), so a pooled
                # connection can die under a request the server never read
                # (docs/real-server.md). Not a decode-rate question: resend.
                STALE_CONNECTION_RETRIES.append(case)
                result = adapter.run(request)
            if not result.ok:
                raise SystemExit(f"{case}: request failed: {result.error}")
            if rep == 0:
                continue
            server_tps = (result.backend or {}).get("predicted_per_second")
            decode_tps = result.timing["decode_tps"]
            tpot_s = result.timing["tpot_s"]
            rows.append({
                "case": case, "rep": rep,
                "output": result.tokens["output"],
                "server_n": (result.backend or {}).get("predicted_n"),
                "server_tps": server_tps,
                "decode_tps": decode_tps,
                "tpot_tps": 1 / tpot_s if tpot_s else None,
            })
    return rows


def ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a and b else None


def fmt(value: float | None, digits: int = 1) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def render(rows: list[dict]) -> tuple[str, float | None]:
    lines = [
        "| case | rep | output tokens | server predicted_n | server tok/s | benchpack decode_tps "
        "| ratio | 1/tpot_s | ratio |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    decode_ratios, tpot_ratios = [], []
    for row in rows:
        d = ratio(row["decode_tps"], row["server_tps"])
        t = ratio(row["tpot_tps"], row["server_tps"])
        if d is not None:
            decode_ratios.append(d)
        if t is not None:
            tpot_ratios.append(t)
        lines.append(
            f"| {row['case']} | {row['rep']} | {row['output']} | {row['server_n']} "
            f"| {fmt(row['server_tps'])} | {fmt(row['decode_tps'])} | {fmt(d, 3)} "
            f"| {fmt(row['tpot_tps'])} | {fmt(t, 3)} |")
    median_decode = statistics.median(decode_ratios) if decode_ratios else None
    median_tpot = statistics.median(tpot_ratios) if tpot_ratios else None
    lines += [
        "",
        f"median decode_tps / server: **{fmt(median_decode, 3)}** "
        f"(min {fmt(min(decode_ratios, default=None), 3)}, goal >= {GOAL_RATIO})",
        f"median (1/tpot_s) / server: **{fmt(median_tpot, 3)}** "
        f"(min {fmt(min(tpot_ratios, default=None), 3)})",
        f"requests: {len(rows)} measured (+ {len(PROMPTS)} warmup); "
        f"resent after a stale keep-alive connection: {len(STALE_CONNECTION_RETRIES)}",
    ]
    return "\n".join(lines), median_decode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--endpoint", help="an already running llama-server (chat URL); default: start one")
    parser.add_argument("--model", default=MODEL_ALIAS)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--max-tokens", type=int, default=128)
    args = parser.parse_args(argv)
    if args.endpoint:
        rows = measure(args.endpoint, args.model, args.reps, args.max_tokens)
    else:
        with running_server() as server:
            rows = measure(server.chat_url, server.model, args.reps, args.max_tokens)
    table, median_decode = render(rows)
    print(table)
    return 0 if median_decode is not None and median_decode >= GOAL_RATIO else 1


if __name__ == "__main__":
    sys.exit(main())
