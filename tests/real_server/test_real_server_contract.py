"""What benchpack's adapters assume about llama-server, checked on the real
thing with plain httpx (no benchpack code): if an upgrade changes one of
these, the adapters' token and timing fields would silently go null."""

from __future__ import annotations

import json
import threading
import uuid

import httpx
import pytest

pytestmark = pytest.mark.real_server


def unique_prompt(text: str) -> str:
    # The server keeps the last prompt of its single slot cached; a fresh
    # prefix keeps one test's cache state from leaking into another's.
    return f"[{uuid.uuid4().hex[:8]}] {text}"


def chat_body(server, prompt: str, *, stream: bool, **extra) -> dict:
    body = {
        "model": server.model,
        "messages": [{"role": "user", "content": prompt}],
        "temperature": 0,
        "max_tokens": 24,
        "stream": stream,
    }
    if stream:
        body["stream_options"] = {"include_usage": True}
    body.update(extra)
    return body


def stream_events(server, body: dict) -> list:
    """Every SSE data payload of one streamed request, decoded; "[DONE]" kept as a string."""
    events = []
    with httpx.stream("POST", server.chat_url, json=body, timeout=120) as response:
        assert response.status_code == 200, response.read()
        for line in response.iter_lines():
            if line.startswith("data: "):
                data = line[len("data: "):]
                events.append(data if data == "[DONE]" else json.loads(data))
    return events


def last_with(events: list, key: str) -> dict:
    found = [e for e in events if isinstance(e, dict) and e.get(key)]
    assert found, f"no event carries {key!r}: {events[-3:]}"
    return found[-1]


def content_deltas(events: list) -> list[str]:
    return [e["choices"][0]["delta"]["content"] for e in events
            if isinstance(e, dict) and e.get("choices")
            and (e["choices"][0].get("delta") or {}).get("content")]


def test_it_streams_a_usage_chunk_with_cached_tokens_and_server_timings(llama_server):
    events = stream_events(llama_server, chat_body(
        llama_server, unique_prompt("Name three colours."), stream=True, cache_prompt=False))

    assert events[-1] == "[DONE]"
    usage = last_with(events, "usage")["usage"]
    assert usage["prompt_tokens"] > 0
    assert usage["completion_tokens"] > 0
    assert usage["prompt_tokens_details"]["cached_tokens"] == 0  # cache_prompt=false: all cold
    timings = last_with(events, "timings")["timings"]
    # The adapter reports tokens from usage and keeps timings as `backend`;
    # both must describe the same request.
    assert timings["predicted_n"] == usage["completion_tokens"]
    assert timings["prompt_n"] + timings.get("cache_n", 0) == usage["prompt_tokens"]
    assert timings["predicted_per_second"] > 0
    assert timings["prompt_per_second"] > 0


def test_it_streams_one_token_per_content_chunk(llama_server):
    # tpot_s divides the first-to-last content-chunk span by output - 1,
    # which is only a per-token time if every token arrives in its own chunk.
    events = stream_events(llama_server, chat_body(
        llama_server, unique_prompt("Count from one to ten in words."), stream=True,
        cache_prompt=False))

    usage = last_with(events, "usage")["usage"]
    finish = last_with(events, "choices")["choices"][0]["finish_reason"]
    # A stop by end-of-turn counts the end token as generated but sends no
    # text for it.
    unsent = {"length": 0, "stop": 1}[finish]
    assert len(content_deltas(events)) == usage["completion_tokens"] - unsent


def test_it_reports_a_repeated_prompt_as_cached_tokens(llama_server):
    body = chat_body(llama_server, unique_prompt("Say hello politely."), stream=True)
    first = last_with(stream_events(llama_server, body), "usage")["usage"]
    again_events = stream_events(llama_server, body)
    again = last_with(again_events, "usage")["usage"]

    assert first["prompt_tokens_details"]["cached_tokens"] < first["prompt_tokens"]
    assert again["prompt_tokens"] == first["prompt_tokens"]
    assert 0 < again["prompt_tokens_details"]["cached_tokens"] <= again["prompt_tokens"]
    assert last_with(again_events, "timings")["timings"]["cache_n"] == \
        again["prompt_tokens_details"]["cached_tokens"]


def test_it_reuses_nothing_when_the_request_turns_the_prompt_cache_off(llama_server):
    prompt = unique_prompt("Say goodbye politely.")
    stream_events(llama_server, chat_body(llama_server, prompt, stream=True))
    cold = last_with(stream_events(llama_server, chat_body(
        llama_server, prompt, stream=True, cache_prompt=False)), "usage")["usage"]

    assert cold["prompt_tokens_details"]["cached_tokens"] == 0


def test_it_answers_plain_requests_with_usage_and_timings(llama_server):
    response = httpx.post(llama_server.chat_url, timeout=120, json=chat_body(
        llama_server, unique_prompt("Name a fruit."), stream=False))

    assert response.status_code == 200
    body = response.json()
    assert body["choices"][0]["message"]["content"]
    assert body["usage"]["completion_tokens"] == body["timings"]["predicted_n"]
    assert isinstance(body["usage"]["prompt_tokens_details"]["cached_tokens"], int)
    assert body["model"] == llama_server.model


def test_it_closes_the_connection_shortly_after_every_streamed_response(llama_server):
    # Why benchpack's clients must resend a request whose reused keep-alive
    # connection closes before any response byte: llama-server drops the
    # connection a few ms after each stream, without `Connection: close`.
    body = chat_body(llama_server, unique_prompt("Say yes."), stream=True, cache_prompt=False)
    with httpx.Client(timeout=120) as client:
        with client.stream("POST", llama_server.chat_url, json=body) as response:
            response.read()
            assert "close" not in response.headers.get("connection", "").lower()
            network_stream = response.extensions["network_stream"]
        # Poll for the server's FIN on the now idle pooled connection (an idle
        # keep-alive socket turns readable only when the peer closes it).
        for _ in range(500):
            if network_stream.get_extra_info("is_readable"):
                break
            threading.Event().wait(0.01)
        assert network_stream.get_extra_info("is_readable")
