"""A scripted LLM endpoint with known timing, for selftest, tests and demos.

It runs in its own process (so its work never shares a GIL with the client
being measured) on 127.0.0.1 and serves:

* `POST /v1/chat/completions` — OpenAI chat, plain JSON or SSE, with usage
  (`prompt_tokens_details.cached_tokens`) and llama-server-style `timings`;
* `POST /v1/messages` — Anthropic Messages, plain JSON or its SSE events;
* `POST /v1/responses` — OpenAI Responses, plain JSON or its SSE events
  (event sequences as the real APIs send them: refserver/apis.py);
* `POST /api/generate` — Ollama, NDJSON or one JSON object;
* `GET /_ref/log`, `POST /_ref/reset`, `POST /_ref/config` — its own record
  of every request (including the `time.perf_counter()` reading taken just
  before each write), and live reconfiguration.

The first token goes out `ttft_s` after the request was read, then one token
every `itl_s`, on an absolute schedule so gaps do not drift; a `responses`
entry may carry its own `ttft_s` / `itl_s`, so concurrent streams can each
follow their own script. Every write of every stream is made by one writer
thread at its scheduled time (`benchpack.measurement.writer`: it sleeps,
and busy-waits the last ~200 µs while a single stream is active), which
keeps 64 concurrent streams on time where a sleeping thread per stream
would fight the others for the GIL. The log keeps, per content token, the
planned time and the `perf_counter()` readings just before and just after
the write (`content_planned`, `content_times`, `content_done`).

The stream can be made as awkward as real servers are (role-only first chunk, empty deltas, keep-alive comments, events
split across writes, usage-only final chunk, reasoning deltas), and a
`scenario` makes it fail the ways real servers fail.

Python: `with RefServer(responses=["```diff\\n...```"]) as srv: srv.openai_url`.
Shell:  `python -m benchpack.refserver.server --port 8081 --reply-file reply.txt`.
"""

from __future__ import annotations

import argparse
import json
import re
import select
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, replace
from dataclasses import field as dataclass_field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from benchpack.adapters import rxstamp
from benchpack.refserver import apis
from benchpack.results.provenance import SCRIPTED_HEADER, SCRIPTED_RUNTIME
from benchpack.measurement.writer import Stream, TimedWriter
# In options.py so that `benchpack --help` need not import this module; re-exported for callers.
from benchpack.refserver.options import SCENARIOS, add_arguments  # noqa: F401

perf_counter = time.perf_counter

DEFAULT_CONFIG: dict[str, Any] = {
    "ttft_s": 0.02,          # request read -> first content/reasoning token
    "itl_s": 0.002,          # gap between tokens
    # Cycled per request: "text" | {"content", "reasoning", "tokens", "ttft_s", "itl_s",
    # "tool_calls": [{"name", "arguments", "id"?}], "match"}. Entries with a "match" are picked by the
    # request instead: the first whose text is in the prompt (a pack's cases, each scripted).
    "responses": [],
    "default_tokens": 16,    # synthetic output length when `responses` is empty
    "prompt_tokens": None,   # None: whitespace word count of the prompt
    "cached_tokens": 0,      # reported as usage.prompt_tokens_details.cached_tokens / timings.cache_n
    "scenario": "ok",
    "close_after": 3,        # close-mid-stream: tokens sent before the connection is cut
    "role_chunk": True,      # OpenAI: a role-only first chunk
    "empty_delta_every": 0,  # OpenAI: an empty-content chunk after every N tokens (0: never)
    "keepalive": False,      # SSE ": keep-alive" comment lines before and between tokens
    "split_events": False,   # each token event written in two pieces
    "timings": True,         # llama-server `timings` object in the final chunk
    "usage_in_final_chunk": False,  # usage on the finish chunk instead of a usage-only chunk
    # A simulated prompt cache, as llama-server keeps one per slot: the words a
    # prompt shares with the previous prompt's start are reported as cached
    # (cached_tokens/cache_n) and cost no prefill time, unless the request
    # sends "cache_prompt": false. TTFT scales with the words evaluated.
    "prompt_cache": False,
    # A context-dependent cost, for the depth lane: each prompt token the
    # server evaluates adds this to the TTFT (a scripted prefill rate), and
    # each prompt token in context adds this to every token gap (decode
    # slowing as the context fills). 0: the reply's own timing only.
    "prefill_s_per_token": 0.0,
    # Attention: each evaluated prompt token also attends to every token before it, so the n-th
    # costs this × n more; a prompt's prefill rate then falls as it grows, as a real server's does.
    "prefill_s_per_token_pair": 0.0,
    "itl_s_per_context_token": 0.0,
    "served_model": None,    # the "model" in responses; None echoes the request's
    # What the server says about itself (None: the route answers 404).
    "props": None,           # GET /props, llama-server style
    "models": None,          # GET /v1/models: a list of model ids
    "ollama_version": None,  # GET /api/version
    "ollama_show": None,     # POST /api/show answers this for the models in `ollama_models`
    "ollama_models": [],
    "ollama_ps": None,       # GET /api/ps: the "models" list
    # Record, as `arrived_at`, when each request reached this machine: the kernel's receive stamp of its
    # first bytes (SO_TIMESTAMPNS, peeked before the request is parsed), so a client's TTFT can be checked
    # against request arrival -> first token written without the server's own wake-up and parsing in it
    # (bench/sidebyside.py). Off by default: the peek assumes a client that does not pipeline requests.
    "request_stamps": False,
    # Send the whole streamed body (every token, the final chunk and the end) in one write, at the first
    # token's time: a server that batches a reply, or one catching up after a stall. The client's reads
    # then hold every token at once and cannot say how they were spaced (docs/measurement.md, "What the
    # reads could not see"); `benchpack selftest` checks that its rows say so.
    "burst": False,
}

_TOKEN_RE = re.compile(r"\S+\s*|\s+")


def split_tokens(text: str) -> list[str]:
    """Word-sized pieces that join back to exactly `text`."""
    return _TOKEN_RE.findall(text)


@dataclass
class Reply:
    reasoning: list[str]
    content: list[str]
    ttft_s: float | None = None  # this reply's own timing; None: the server's config
    itl_s: float | None = None
    calls: list = dataclass_field(default_factory=list)  # apis.ScriptedCall: tool calls after the content

    @property
    def call_tokens(self) -> int:
        return sum(1 + len(call.fragments) for call in self.calls)


def reply_for(entry: Any, default_tokens: int) -> Reply:
    if entry is None:
        entry = {"tokens": default_tokens}
    if isinstance(entry, str):
        return Reply([], split_tokens(entry))
    reasoning = split_tokens(entry.get("reasoning", ""))
    timing: dict[str, Any] = {key: float(entry[key]) for key in ("ttft_s", "itl_s") if entry.get(key) is not None}
    timing["calls"] = apis.scripted_calls(entry.get("tool_calls"), split_tokens)
    if "content" in entry:
        return Reply(reasoning, split_tokens(entry["content"]), **timing)
    count = int(entry.get("tokens", 0 if timing["calls"] else default_tokens))
    return Reply(reasoning, [f" tok{i}" for i in range(count)], **timing)


def reply_timing(reply: Reply, config: dict) -> tuple[float, float]:
    """(ttft_s, itl_s) for this reply: its own, else the server's."""
    ttft = reply.ttft_s if reply.ttft_s is not None else float(config["ttft_s"])
    itl = reply.itl_s if reply.itl_s is not None else float(config["itl_s"])
    return ttft, itl


class _State:
    def __init__(self, config: dict) -> None:
        self.lock = threading.Lock()
        self.config = {**DEFAULT_CONFIG, **config}
        self.log: list[dict] = []
        self.cursor = 0
        self.stopping = threading.Event()
        self.writer = TimedWriter()
        self.cached_words: list[str] = []  # the simulated prompt cache's last prompt

    def prompt_cache_hit(self, config: dict, words: list[str], cache_prompt: Any) -> int:
        """Words of `words` served from the simulated cache (0 when it is off or bypassed)."""
        if not config["prompt_cache"]:
            return int(config["cached_tokens"])
        with self.lock:
            previous, self.cached_words = self.cached_words, list(words)
        if cache_prompt is False:
            return 0
        shared = 0
        for mine, theirs in zip(words, previous):
            if mine != theirs:
                break
            shared += 1
        # A real server always evaluates at least the last prompt token.
        return min(shared, max(0, len(words) - 1))

    def next_reply(self, prompt: str = "") -> tuple[dict, Reply]:
        with self.lock:
            config = dict(self.config)
            responses = config["responses"]
            matched = [e for e in responses if isinstance(e, dict) and e.get("match") is not None]
            if matched:
                entry = next((e for e in matched if str(e["match"]) in prompt), None)
            else:
                entry = responses[self.cursor % len(responses)] if responses else None
            self.cursor += 1
        return config, reply_for(entry, config["default_tokens"])


def _log_sent(record: dict, kind: str, at: float | None, before: float, after: float) -> None:
    record["sends"].append([before, kind])
    if kind == "tool":
        record["tool_times"].append(before)
    if kind in ("content", "reasoning", "tool"):
        record["token_times"].append(before)
        if kind == "content":
            record["content_times"].append(before)
            record["content_done"].append(after)
            record["content_planned"].append(at)


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


def _sse(obj: Any) -> bytes:
    return b"data: " + (obj if isinstance(obj, bytes) else json.dumps(obj, separators=(",", ":")).encode()) + b"\n\n"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "benchpack-refserver"
    state: _State  # set on the subclass made per server
    out: Stream  # this request's planned writes (benchpack.measurement.writer)

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self.state.lock:
            stamps = bool(self.state.config.get("request_stamps"))
        self.stamped = stamps and rxstamp.enable(self.connection)
        self.arrived_at: float | None = None
        self.burst: list[tuple[dict, str, bytes, float | None]] | None = None  # burst mode: held writes

    def handle_one_request(self) -> None:
        self.arrived_at = None
        self.burst = None
        if self.stamped:
            try:  # blocks until the next request's first bytes are here, as the parser's first read would
                offset = rxstamp.realtime_offset_ns()
                data, ancillary, _, _ = self.connection.recvmsg(1, rxstamp.ANCILLARY_BYTES, socket.MSG_PEEK)
                if data and ancillary:
                    self.arrived_at = rxstamp.arrival(ancillary, offset, perf_counter())
            except OSError:
                pass
        super().handle_one_request()

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass

    def send_response(self, code: int, message: str | None = None) -> None:
        # Every answer says it is scripted; the runner's probe records it, so a
        # bundle made from a run against this server stays demo data in the registry.
        super().send_response(code, message)
        self.send_header(SCRIPTED_HEADER, f"{SCRIPTED_RUNTIME}; scripted replies, not a model")

    # ---- plumbing -------------------------------------------------------
    def _read_json(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            return json.loads(raw) if raw else {}
        except ValueError:
            return None

    def _send_json(self, status: int, obj: Any) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _start_chunked(self, content_type: str, record: dict) -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        record["sends"].append([perf_counter(), "headers"])

    def _write(self, record: dict, kind: str, data: bytes, at: float | None = None) -> None:
        """Plan one chunk for `at` (None: right after the previous); the writer thread logs when it went out."""
        if self.burst is not None:  # held for the one write of the whole body (_send_burst)
            self.burst.append((record, kind, data, at))
            return

        def sent(before: float, after: float) -> None:
            _log_sent(record, kind, at, before, after)

        self.out.write(_chunk(data), at, sent)

    def _wait_until(self, at: float) -> None:
        self.out.write(b"", at)
        self.out.flush()

    def _end_chunked(self) -> None:
        if not self._send_burst(b"0\r\n\r\n"):
            self.out.write(b"0\r\n\r\n")
        self.out.flush()

    def _send_burst(self, end: bytes) -> bool:
        """Burst mode: every held chunk and `end` in one write, at the first planned time (each token logged
        as sent then). False when nothing was held."""
        held, self.burst = self.burst, None
        if not held:
            return False
        at = next((when for _, _, _, when in held if when is not None), None)

        def sent(before: float, after: float) -> None:
            for record, kind, _, _ in held:
                _log_sent(record, kind, at, before, after)

        self.out.write(b"".join(_chunk(data) for _, _, data, _ in held) + end, at, sent)
        return True

    def _cut(self) -> None:
        self._send_burst(b"")
        self.out.flush()
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _hang(self) -> None:
        # Say nothing until the client gives up or the server stops.
        self.close_connection = True
        while not self.state.stopping.is_set():
            readable, _, _ = select.select([self.connection], [], [], 0.2)
            if readable:
                try:
                    if not self.connection.recv(1):
                        return
                except OSError:
                    return

    # ---- routes ---------------------------------------------------------
    def do_GET(self) -> None:
        if self.path == "/_ref/log":
            with self.state.lock:
                log = list(self.state.log)
            self._send_json(200, log)
        elif self.path in ("/_ref/health", "/health"):
            self._send_json(200, {"status": "ok"})
        elif self.path in self._SELF_DESCRIPTION:
            self._describe(self._SELF_DESCRIPTION[self.path])
        else:
            self._send_json(404, {"error": {"message": f"no route {self.path}"}})

    # GET routes where a server describes itself -> how to build the answer from config.
    _SELF_DESCRIPTION = {
        "/props": lambda c: c["props"],
        "/v1/models": lambda c: None if c["models"] is None else
        {"object": "list", "data": [{"id": m, "object": "model"} for m in c["models"]]},
        "/api/version": lambda c: None if c["ollama_version"] is None else {"version": c["ollama_version"]},
        "/api/ps": lambda c: None if c["ollama_ps"] is None else {"models": c["ollama_ps"]},
    }

    def _describe(self, build) -> None:
        with self.state.lock:
            answer = build(dict(self.state.config))
        if answer is None:
            self._send_json(404, {"error": {"message": f"no route {self.path}"}})
        else:
            self._send_json(200, answer)

    def do_POST(self) -> None:
        received = perf_counter()
        body = self._read_json()
        if self.path == "/_ref/reset":
            with self.state.lock:
                self.state.log.clear()
                self.state.cursor = 0
            self._send_json(200, {"ok": True})
            return
        if self.path == "/_ref/config":
            with self.state.lock:
                self.state.config.update(body or {})
                self.state.cursor = 0
            self._send_json(200, self.state.config)
            return
        if body is None or not isinstance(body, dict):
            self._send_json(400, {"error": {"message": "request body is not a JSON object", "code": 400}})
            return
        if self.path == "/api/show":
            with self.state.lock:
                config = dict(self.state.config)
            if config["ollama_show"] is not None and body.get("model") in config["ollama_models"]:
                self._send_json(200, config["ollama_show"])
            else:
                self._send_json(404, {"error": f"model '{body.get('model')}' not found"})
            return
        if self.path not in self._APIS:
            self._send_json(404, {"error": {"message": f"no route {self.path}"}})
            return
        prompt = apis.prompt_text(self.path, body)
        config, reply = self.state.next_reply(prompt)
        # the request's headers, names lower-cased (what an API requires, e.g. anthropic-version); never a key
        headers = {k.lower(): v for k, v in self.headers.items() if k.lower() not in ("authorization", "x-api-key")}
        record = {"path": self.path, "body": body, "headers": headers, "received_at": received,
                  "arrived_at": self.arrived_at, "status": 200,
                  "sends": [], "token_times": [], "content_times": [], "content_done": [], "content_planned": [],
                  "tool_times": [], "end_at": None}
        self.out = self.state.writer.stream(self.connection)
        with self.state.lock:
            record["id"] = len(self.state.log)
            self.state.log.append(record)
        try:
            getattr(self, self._APIS[self.path])(body, config, reply, record, prompt)
        except (BrokenPipeError, ConnectionResetError):
            record["status"] = "client-gone"
            self.close_connection = True
        record["end_at"] = perf_counter()

    _APIS = {"/v1/chat/completions": "_chat", "/api/generate": "_generate", "/v1/messages": "_messages",
             "/v1/responses": "_responses"}

    def _failures(self, config: dict, body: dict, record: dict) -> bool:
        scenario = config["scenario"]
        if scenario == "http-500":
            record["status"] = 500
            self._send_json(500, {"error": {"message": "scripted internal error", "type": "server_error", "code": 500}})
            return True
        if scenario == "reject-stream-options" and "stream_options" in body:
            record["status"] = 400
            self._send_json(400, {"error": {"code": 400, "type": "invalid_request_error",
                                            "message": "Unrecognized request argument supplied: stream_options"}})
            return True
        if scenario == "hang":
            record["status"] = "hang"
            self._hang()
            return True
        return False

    def _counts(self, config: dict, prompt: str, reply: Reply, max_tokens: Any) -> tuple[int, int, Reply]:
        if isinstance(max_tokens, int) and max_tokens >= 0:
            budget = max_tokens
            reasoning = reply.reasoning[:budget]
            content = reply.content[: max(0, budget - len(reasoning))]
            reply = replace(reply, reasoning=reasoning, content=content)
        prompt_tokens = config["prompt_tokens"]
        if prompt_tokens is None:
            prompt_tokens = len(prompt.split())
        # Tool calls are not cut by the budget: a scripted call is whole or absent.
        return int(prompt_tokens), len(reply.reasoning) + len(reply.content) + reply.call_tokens, reply

    def _prefill(self, config: dict, body: dict, prompt: str, prompt_tokens: int,
                 ttft: float) -> tuple[int, float]:
        """(cached prompt tokens, seconds to the first token) for this request, from the
        reply's own `ttft` for a whole prompt."""
        cached = min(self.state.prompt_cache_hit(config, prompt.split(), body.get("cache_prompt")), prompt_tokens)
        if config["prompt_cache"] and prompt_tokens:
            ttft *= max(prompt_tokens - cached, 1) / prompt_tokens
        ttft += float(config["prefill_s_per_token"] or 0) * max(prompt_tokens - cached, 0)
        # Σ pair × n over the evaluated positions n = cached … prompt_tokens − 1
        ttft += float(config.get("prefill_s_per_token_pair") or 0) * max(prompt_tokens ** 2 - cached ** 2, 0) / 2
        return cached, ttft

    @staticmethod
    def _context_itl(config: dict, itl: float, prompt_tokens: int) -> float:
        return itl + float(config["itl_s_per_context_token"] or 0) * prompt_tokens

    def _model(self, config: dict, body: dict) -> str:
        return config["served_model"] or body.get("model", "ref")

    # ---- OpenAI ---------------------------------------------------------
    def _plan(self, body: dict, config: dict, reply: Reply, record: dict, prompt: str,
              max_tokens: Any) -> tuple[apis.Answer, float, float]:
        """The reply as this request gets it (budget, cache, timing): (answer, first token time, gap)."""
        full = len(reply.reasoning) + len(reply.content) + reply.call_tokens
        prompt_tokens, output_tokens, reply = self._counts(config, prompt, reply, max_tokens)
        ttft, itl = reply_timing(reply, config)
        itl = self._context_itl(config, itl, prompt_tokens)
        cached, ttft = self._prefill(config, body, prompt, prompt_tokens, ttft)
        predicted_ms = max(0, output_tokens - 1) * itl * 1000
        timings = {"cache_n": cached, "prompt_n": prompt_tokens - cached, "prompt_ms": ttft * 1000,
                   "prompt_per_second": (prompt_tokens - cached) / ttft if ttft > 0 else None,
                   "predicted_n": output_tokens, "predicted_ms": predicted_ms,
                   "predicted_per_second": (output_tokens - 1) / (predicted_ms / 1000) if predicted_ms else None}
        answer = apis.Answer(id=f"ref{record['id']}", model=self._model(config, body), reasoning=reply.reasoning,
                             content=reply.content, calls=reply.calls, prompt_tokens=prompt_tokens, cached=cached,
                             output_tokens=output_tokens, truncated=output_tokens < full,
                             timings=timings if config["timings"] else None, created=int(time.time()))
        return answer, record["received_at"] + ttft, itl

    def _send_steps(self, record: dict, config: dict, steps: list, first_at: float, itl: float) -> None:
        """An SSE answer: token steps on the schedule, the others right after the step before them."""
        self._start_chunked("text/event-stream", record)
        token = 0
        for kind, data, timed in steps:
            if timed and config["scenario"] == "close-mid-stream" and token >= int(config["close_after"]):
                record["status"] = "closed-mid-stream"
                self._cut()
                return
            if config["keepalive"] and timed and token and token % 4 == 0:
                self._write(record, "keepalive", b": keep-alive\n\n")
            at = first_at + token * itl if timed else None
            if timed and config["split_events"]:
                cut = 3 if token == 0 else len(data) // 2
                self._write(record, "split", data[:cut], at)
                self._write(record, kind, data[cut:], at + 0.0002)
            else:
                self._write(record, kind if timed else "event", data, at)
            token += timed
        self._end_chunked()

    def _whole(self, record: dict, answer: apis.Answer, first_at: float, itl: float, obj: dict) -> None:
        self._wait_until(first_at + max(0, answer.output_tokens - 1) * itl)
        self._send_json(200, obj)
        record["sends"].append([perf_counter(), "body"])

    # ---- Anthropic Messages / OpenAI Responses (refserver/apis.py) -------
    def _messages(self, body: dict, config: dict, reply: Reply, record: dict, prompt: str) -> None:
        if self._failures(config, body, record):
            return
        answer, first_at, itl = self._plan(body, config, reply, record, prompt, body.get("max_tokens"))
        if not body.get("stream"):
            self._whole(record, answer, first_at, itl, apis.anthropic_message(answer))
        else:
            self._send_steps(record, config, apis.anthropic_stream(answer), first_at, itl)

    def _responses(self, body: dict, config: dict, reply: Reply, record: dict, prompt: str) -> None:
        if self._failures(config, body, record):
            return
        answer, first_at, itl = self._plan(body, config, reply, record, prompt, body.get("max_output_tokens"))
        if not body.get("stream"):
            self._whole(record, answer, first_at, itl, apis.responses_whole(answer))
        else:
            self._send_steps(record, config, apis.responses_stream(answer), first_at, itl)

    # ---- OpenAI chat ----------------------------------------------------
    def _chat(self, body: dict, config: dict, reply: Reply, record: dict, prompt: str) -> None:
        if self._failures(config, body, record):
            return
        answer, first_at, itl = self._plan(body, config, reply, record, prompt, body.get("max_tokens"))
        reply = replace(reply, reasoning=answer.reasoning, content=answer.content)
        prompt_tokens, output_tokens, cached, timings = (answer.prompt_tokens, answer.output_tokens, answer.cached,
                                                        answer.timings)
        finish = "length" if answer.truncated else "tool_calls" if reply.calls else "stop"
        usage = {"prompt_tokens": prompt_tokens, "completion_tokens": output_tokens,
                 "total_tokens": prompt_tokens + output_tokens,
                 "prompt_tokens_details": {"cached_tokens": cached}}
        base = {"id": f"chatcmpl-ref{record['id']}", "object": "chat.completion.chunk", "created": int(time.time()),
                "model": self._model(config, body)}
        if not body.get("stream"):
            self._wait_until(first_at + max(0, output_tokens - 1) * itl)
            message = {"role": "assistant", "content": "".join(reply.content) if reply.content or not reply.calls
                       else None}
            if reply.reasoning:
                message["reasoning_content"] = "".join(reply.reasoning)
            if reply.calls:
                message["tool_calls"] = apis.chat_tool_calls(reply.calls)
            obj = {**base, "object": "chat.completion",
                   "choices": [{"index": 0, "message": message, "finish_reason": finish}], "usage": usage}
            if timings:
                obj["timings"] = timings
            self._send_json(200, obj)
            record["sends"].append([perf_counter(), "body"])
            return
        self._start_chunked("text/event-stream", record)
        self.burst = [] if config["burst"] else None
        if config["keepalive"]:
            self._write(record, "keepalive", b": keep-alive\n\n")
        if config["role_chunk"]:
            self._write(record, "role", _sse({**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": None}, "finish_reason": None}]}))
        tokens = ([("reasoning", {"reasoning_content": t}) for t in reply.reasoning]
                  + [("content", {"content": t}) for t in reply.content] + apis.chat_tool_deltas(reply.calls))
        every = int(config["empty_delta_every"])
        for i, (kind, delta) in enumerate(tokens):
            if config["scenario"] == "close-mid-stream" and i >= int(config["close_after"]):
                record["status"] = "closed-mid-stream"
                self._cut()
                return
            event = _sse({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
            at = first_at + i * itl
            if config["keepalive"] and i and i % 4 == 0:
                self._write(record, "keepalive", b": keep-alive\n\n")
            if config["split_events"]:
                cut = 3 if i == 0 else len(event) // 2
                self._write(record, "split", event[:cut], at)
                self._write(record, kind, event[cut:], at + 0.0002)
            else:
                self._write(record, kind, event, at)
            if every and (i + 1) % every == 0:
                self._write(record, "empty", _sse({**base, "choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": None}]}))
        if config["scenario"] == "close-mid-stream":
            record["status"] = "closed-mid-stream"
            self._cut()
            return
        final: dict[str, Any] = {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}
        if timings:
            final["timings"] = timings
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        if include_usage and config["usage_in_final_chunk"]:
            final["usage"] = usage
        tail = _sse(final)
        if include_usage and not config["usage_in_final_chunk"]:
            tail += _sse({**base, "choices": [], "usage": usage})
        # Several events in one write, as servers do at the end of a stream.
        self._write(record, "final", tail + _sse(b"[DONE]"))
        self._end_chunked()

    # ---- Ollama ---------------------------------------------------------
    def _generate(self, body: dict, config: dict, reply: Reply, record: dict, prompt: str) -> None:
        if self._failures(config, body, record):
            return
        options = body.get("options") or {}
        prompt_tokens, output_tokens, reply = self._counts(config, prompt, reply, options.get("num_predict"))
        # Ollama has no per-request cache switch, and reports only the prompt
        # tokens it evaluated.
        ttft, itl = reply_timing(reply, config)
        itl = self._context_itl(config, itl, prompt_tokens)
        cached, ttft = self._prefill(config, {}, prompt, prompt_tokens, ttft)
        first_at = record["received_at"] + ttft
        base = {"model": self._model(config, body), "created_at": "2026-01-01T00:00:00Z"}

        def final() -> dict:
            eval_ns = int(max(0, output_tokens - 1) * itl * 1e9) or 1
            return {**base, "response": "", "done": True, "done_reason": "stop",
                    "total_duration": int((perf_counter() - record["received_at"]) * 1e9),
                    "load_duration": 1000, "prompt_eval_count": prompt_tokens - cached,
                    "prompt_eval_duration": int(ttft * 1e9), "eval_count": output_tokens, "eval_duration": eval_ns}

        if body.get("stream", True) is False:
            self._wait_until(first_at + max(0, output_tokens - 1) * itl)
            obj = {**final(), "response": "".join(reply.content)}
            if reply.reasoning:
                obj["thinking"] = "".join(reply.reasoning)
            self._send_json(200, obj)
            record["sends"].append([perf_counter(), "body"])
            return
        self._start_chunked("application/x-ndjson", record)
        self.burst = [] if config["burst"] else None
        tokens = [("thinking", t) for t in reply.reasoning] + [("response", t) for t in reply.content]
        for i, (field, text) in enumerate(tokens):
            if config["scenario"] == "close-mid-stream" and i >= int(config["close_after"]):
                record["status"] = "closed-mid-stream"
                self._cut()
                return
            line = json.dumps({**base, field: text, "done": False}).encode() + b"\n"
            self._write(record, "content" if field == "response" else "reasoning", line, first_at + i * itl)
        self._write(record, "final", json.dumps(final()).encode() + b"\n")
        self._end_chunked()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256  # 64+ clients connecting at once must not wait for a SYN retry

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client hanging up is part of the script (timeouts, closed sessions), not a server fault.
        if isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            return
        super().handle_error(request, client_address)


def serve(config: dict, host: str = "127.0.0.1", port: int = 0, announce=print) -> None:
    state = _State(config)
    handler = type("Handler", (_Handler,), {"state": state})
    server = _Server((host, port), handler)
    if config.get("request_stamps"):
        # Stamping on from the listening socket on (accepted sockets inherit it), not from each handler's
        # setup: the kernel turns receive stamps on machine-wide lazily, after the first socket asks, so a
        # request that arrived just after its connection's accept could carry no stamp (`arrived_at` null,
        # seen once in CI's exclusive pass).
        rxstamp.enable(server.socket)
    announce(f"benchpack-refserver listening on http://{host}:{server.server_address[1]}", flush=True)
    try:
        server.serve_forever(poll_interval=0.1)
    except KeyboardInterrupt:
        pass
    finally:
        state.stopping.set()
        server.server_close()


class RefServer:
    """Start the reference endpoint in a child process; stop it on exit.

    `srv.url` is the base URL, `srv.openai_url` the chat-completions URL
    (the openai-chat endpoint), `srv.ollama_url` the Ollama base URL.
    Keyword arguments are DEFAULT_CONFIG keys.
    """

    def __init__(self, responses: list | None = None, *, port: int = 0, **config: Any) -> None:
        unknown = set(config) - set(DEFAULT_CONFIG)
        if unknown:
            raise TypeError(f"unknown RefServer option(s): {', '.join(sorted(unknown))}")
        self.config = {**config, "responses": list(responses or [])}
        self.port = port  # 0: a free one (a caller that must name its ports passes one: `manage.py demo`)
        self.process: subprocess.Popen | None = None
        self.url = ""

    def start(self) -> RefServer:
        # Its own session: a terminal's Ctrl-C (SIGINT to the foreground group)
        # reaches the owner, which stops this child in stop(); the child never
        # dies half-imported with a traceback of its own.
        self.process = subprocess.Popen(
            [sys.executable, "-m", "benchpack.refserver.server", "--port", str(self.port), "--config", "-"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, start_new_session=True,
        )
        assert self.process.stdin and self.process.stdout
        try:
            self.process.stdin.write(json.dumps(self.config))
            self.process.stdin.close()
            line = self.process.stdout.readline()
        except BaseException:  # Ctrl-C while it starts: no context manager will stop it
            self.stop()
            raise
        if "listening on " not in line:
            self.stop()
            raise RuntimeError(f"reference server did not start: {line!r}")
        self.url = line.rsplit(" ", 1)[1].strip()
        return self

    @property
    def openai_url(self) -> str:
        return self.url + "/v1/chat/completions"

    @property
    def anthropic_url(self) -> str:
        return self.url + "/v1/messages"

    @property
    def responses_url(self) -> str:
        return self.url + "/v1/responses"

    @property
    def ollama_url(self) -> str:
        return self.url

    def _control(self, method: str, path: str, body: dict | None = None) -> Any:
        import httpx  # the child process never needs it

        response = httpx.request(method, self.url + path, json=body, timeout=10)
        response.raise_for_status()
        return response.json()

    def configure(self, **changes: Any) -> dict:
        """Change the script from now on (also rewinds `responses`)."""
        return self._control("POST", "/_ref/config", changes)

    def log(self) -> list[dict]:
        return self._control("GET", "/_ref/log")

    def reset(self) -> None:
        self._control("POST", "/_ref/reset")

    def stop(self) -> None:
        if self.process is None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        if self.process.stdout:
            self.process.stdout.close()
        self.process = None

    def __enter__(self) -> RefServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


LIKE_LLAMA_SERVER = {
    "prompt_cache": True, "served_model": "refserver-model", "models": ["refserver-model"],
    "props": {"default_generation_settings": {"n_ctx": 4096}, "total_slots": 1,
              "model_alias": "refserver-model", "model_path": "refserver-model.gguf",
              "build_info": "benchpack-refserver"},
}


def config_from_args(args: argparse.Namespace) -> dict[str, Any]:
    config: dict[str, Any] = {}
    if args.config:
        source = "stdin" if args.config == "-" else args.config
        try:
            config = json.loads(sys.stdin.read() if args.config == "-" else open(args.config, encoding="utf-8").read())
        except (OSError, ValueError) as exc:
            # Also what a child sees when its parent stops mid-handshake (stdin closed):
            # one line and exit status 1, not a traceback in the parent's console.
            raise SystemExit(f"benchpack-refserver: --config {source}: not a JSON object of settings ({exc})") from None
    if getattr(args, "like", None) == "llama-server":
        config = {**LIKE_LLAMA_SERVER, **config}
    if args.reply_file:
        config["responses"] = [open(path, encoding="utf-8").read() for path in args.reply_file]
    if args.ttft_ms is not None:
        config["ttft_s"] = args.ttft_ms / 1000
    if args.itl_ms is not None:
        config["itl_s"] = args.itl_ms / 1000
    if args.scenario:
        config["scenario"] = args.scenario
    if getattr(args, "burst", False):
        config["burst"] = True
    return config


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchpack.refserver.server", description=__doc__.split("\n\n")[0])
    add_arguments(parser)
    args = parser.parse_args(argv)
    serve(config_from_args(args), args.host, args.port)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
