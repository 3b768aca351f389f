#!/usr/bin/env python3
"""Example external agent that owns one model call over HTTP loopback.

Besides the runner-appended arguments it takes an example-owned
`--model-call-url`, which must be a plain `http://` URL on a loopback host
(127.0.0.0/8, ::1 or localhost) with no credentials, query string or
fragment. It sends one small OpenAI-chat-shaped JSON request whose only
content is safe identifiers (case id, repetition, model), writes the reply
content to `benchpack-model-call.txt` in the workspace, and appends one safe
telemetry line to the context's `run.model_call_log_path`. Prompts, replies,
headers and URLs never go into the telemetry.

  BENCHPACK_EXTERNAL_AGENT_ARGV='["python3", "examples/external-agent/model-call-agent.py",
                                  "--model-call-url", "http://127.0.0.1:8081/v1/chat/completions"]'
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

OUTPUT_FILE = "benchpack-model-call.txt"


def loopback_url_problem(url: str) -> str | None:
    """Why `url` is not an acceptable loopback model-call URL (None: acceptable)."""
    try:
        parts = urlsplit(url)
        host = parts.hostname
        parts.port  # noqa: B018 - raises ValueError for a malformed port
    except ValueError:
        return "is not a valid URL"
    if parts.scheme != "http":
        return "must use http://"
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        return "must not contain credentials"
    if parts.query or "?" in url:
        return "must not contain a query string"
    if parts.fragment:
        return "must not contain a fragment"
    if host is None:
        return "has no host"
    if host == "localhost":
        return None
    try:
        if ipaddress.ip_address(host).is_loopback:
            return None
    except ValueError:
        pass
    return "must point to a loopback host (127.0.0.1, ::1 or localhost)"


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name in ("--workspace", "--case", "--output-dir", "--repetition", "--context", "--model-call-url"):
        parser.add_argument(name, required=True)
    return parser.parse_args(argv)


def reply_content(body: object) -> str | None:
    if isinstance(body, dict) and isinstance(body.get("content"), str):
        return body["content"]
    try:
        content = body["choices"][0]["message"]["content"]  # type: ignore[index]
    except (KeyError, IndexError, TypeError):
        return None
    return content if isinstance(content, str) else None


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    problem = loopback_url_problem(args.model_call_url)
    if problem:
        print(f"model-call-agent: --model-call-url {problem}", file=sys.stderr)
        return 2
    context = json.loads(Path(args.context).read_text(encoding="utf-8"))
    model = context["adapter"]["model"]
    repetition = int(args.repetition)
    request_body = {
        "model": model,
        "stream": False,
        "messages": [{"role": "user", "content": f"case {args.case} repetition {repetition}"}],
    }
    request = urllib.request.Request(
        args.model_call_url,
        data=json.dumps(request_body).encode("utf-8"),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    telemetry: dict = {"schema_version": 1, "sequence": 1, "model": model, "adapter": "openai-chat",
                       "endpoint": "loopback", "response_format": "json"}
    started = time.monotonic()
    content, usage, finish = None, {}, None
    try:
        with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310 - loopback http only
            body = json.loads(response.read().decode("utf-8"))
        content = reply_content(body)
        if isinstance(body, dict):
            usage = body.get("usage") if isinstance(body.get("usage"), dict) else {}
            choices = body.get("choices")
            if isinstance(choices, list) and choices and isinstance(choices[0], dict):
                finish = choices[0].get("finish_reason")
    except (OSError, ValueError, urllib.error.URLError):
        telemetry["error"] = "request failed"
    telemetry["duration_s"] = round(time.monotonic() - started, 6)
    telemetry["ok"] = content is not None
    if content is None and "error" not in telemetry:
        telemetry["error"] = "reply had no content"
    for source, target in (("prompt_tokens", "prompt_tokens"), ("completion_tokens", "output_tokens")):
        if isinstance(usage.get(source), int) and not isinstance(usage.get(source), bool):
            telemetry[target] = usage[source]
    if isinstance(finish, str) and finish:
        telemetry["finish_reason"] = finish
    log = Path(context["run"]["model_call_log_path"])
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(telemetry, sort_keys=True) + "\n")
    if content is None:
        print(f"model-call-agent: {telemetry['error']}", file=sys.stderr)
        return 1
    (Path(args.workspace) / OUTPUT_FILE).write_text(content, encoding="utf-8")
    print(f"model-call-agent: wrote {OUTPUT_FILE} ({len(content)} characters)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
