"""Write vllm-bench-serve.json: a `vllm bench serve --save-result --save-detailed` result, measured for real.

vLLM's bench client cannot be installed here (the vllm wheel pulls CUDA torch,
gigabytes, and there is no CPU-only client package), so this script is that
client's measuring loop and result writer re-done from vLLM's source
(vllm/benchmarks/lib/endpoint_request_func.py `async_request_openai_chat_completions`:
ttft at the first chunk with choices, one ITL per later content chunk, latency
at the last data chunk, output tokens from usage; vllm/benchmarks/serve.py
`calculate_metrics` and the `result_json` it saves: numpy mean/median/std/
percentile × 1000, the same keys in the same order). It times real streamed
requests against a running endpoint:

    uv run python tests/data/interop/make_vllm_golden.py http://127.0.0.1:PORT MODEL OUT.json [N]
"""

from __future__ import annotations

import json
import sys
import time
from datetime import datetime

import httpx
import numpy as np

PERCENTILES = [99.0]  # vllm bench serve's default --metric-percentiles


def one(client: httpx.Client, url: str, model: str, prompt: str) -> dict:
    out = {"ttft": 0.0, "itl": [], "latency": 0.0, "output_tokens": 0, "prompt_len": 0, "error": "",
           "generated_text": "", "start_time": 0.0}
    body = {"model": model, "messages": [{"role": "user", "content": prompt}], "max_completion_tokens": 32,
            "stream": True, "stream_options": {"include_usage": True}, "temperature": 0}
    st = time.perf_counter()
    out["start_time"] = st
    most_recent = st
    try:
        with client.stream("POST", url + "/v1/chat/completions", json=body, timeout=120) as response:
            if response.status_code != 200:
                out["error"] = response.reason_phrase or f"HTTP {response.status_code}"
                return out
            for line in response.iter_lines():
                line = line.strip()
                if not line or line.startswith(":"):
                    continue
                data = line.removeprefix("data: ")
                if data == "[DONE]":
                    continue
                timestamp = time.perf_counter()
                chunk = json.loads(data)
                if chunk.get("choices"):
                    content = chunk["choices"][0]["delta"].get("content")
                    if out["ttft"] == 0.0:
                        out["ttft"] = timestamp - st
                    else:
                        out["itl"].append(timestamp - most_recent)
                    out["generated_text"] += content or ""
                elif chunk.get("usage"):
                    out["output_tokens"] = chunk["usage"].get("completion_tokens")
                    out["prompt_len"] = chunk["usage"].get("prompt_tokens")
                most_recent = timestamp
        out["latency"] = most_recent - st
    except httpx.HTTPError as exc:
        out["error"] = repr(exc)
    return out


def stats(name: str, values: list[float], result: dict) -> None:
    result[f"mean_{name}_ms"] = float(np.mean(values or 0) * 1000)
    result[f"median_{name}_ms"] = float(np.median(values or 0) * 1000)
    result[f"std_{name}_ms"] = float(np.std(values or 0) * 1000)
    for p in PERCENTILES:
        word = str(int(p)) if int(p) == p else str(p)
        result[f"p{word}_{name}_ms"] = float(np.percentile(values or 0, p) * 1000)


def main(url: str, model: str, path: str, n: int = 16) -> None:
    outputs = []
    with httpx.Client() as client:
        started = time.perf_counter()
        for i in range(n):
            outputs.append(one(client, url, model, f"[nonce {i:06d}] say something"))
        duration = time.perf_counter() - started
    ok = [o for o in outputs if not o["error"]]
    ttfts = [o["ttft"] for o in ok]
    tpots = [(o["latency"] - o["ttft"]) / (o["output_tokens"] - 1) for o in ok if o["output_tokens"] > 1]
    itls = [gap for o in ok for gap in o["itl"]]
    e2els = [o["latency"] for o in ok]
    output_lens = [o["output_tokens"] if not o["error"] else 0 for o in outputs]
    total_input = sum(o["prompt_len"] for o in ok)
    result = {
        "date": datetime.now().strftime("%Y%m%d-%H%M%S"), "endpoint_type": "openai-chat", "backend": "openai-chat",
        "label": None, "model_id": model, "tokenizer_id": model, "num_prompts": n, "request_rate": "inf",
        "burstiness": 1.0, "max_concurrency": 1,
        "duration": duration, "completed": len(ok), "failed": len(outputs) - len(ok),
        "total_input_tokens": total_input, "total_output_tokens": sum(output_lens),
        "request_throughput": len(ok) / duration, "request_goodput": None,
        "output_throughput": sum(output_lens) / duration,
        "total_token_throughput": (total_input + sum(output_lens)) / duration,
        "input_lens": [o["prompt_len"] for o in outputs], "output_lens": output_lens,
        "ttfts": [o["ttft"] for o in outputs], "itls": [o["itl"] for o in outputs],
        "latencies": [o["latency"] for o in outputs], "start_times": [o["start_time"] for o in outputs],
        "queue_times": [0.0 for _ in outputs], "generated_texts": [o["generated_text"] for o in outputs],
        "errors": [o["error"] for o in outputs], "max_output_tokens_per_s": 0.0, "max_concurrent_requests": 1,
        "rtfx": 0.0,
    }
    stats("ttft", ttfts, result)
    stats("tpot", tpots, result)
    stats("itl", itls, result)
    stats("e2el", e2els, result)
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(result, handle)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]) if len(sys.argv) > 4 else 16)
