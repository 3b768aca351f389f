"""The measuring proxy in front of the real llama-server, in each API it answers: chat, Messages, Responses."""

from __future__ import annotations

import json

import httpx
import pytest

from benchpack.agents.proxy import MeasuringProxy

pytestmark = [pytest.mark.real_server, pytest.mark.slow]

PROMPT = "List five fruits, one per line."
REQUESTS = {
    "/v1/chat/completions": {"messages": [{"role": "user", "content": PROMPT}], "max_tokens": 24,
                             "stream_options": {"include_usage": True}},
    "/v1/messages": {"messages": [{"role": "user", "content": PROMPT}], "max_tokens": 24},
    "/v1/responses": {"input": PROMPT, "max_output_tokens": 24},
}


def test_each_api_is_forwarded_and_timed_with_its_own_usage_fields(tmp_path, llama_server):
    turns_file = tmp_path / "agent-turns.jsonl"
    answers = {}
    with MeasuringProxy(llama_server.base_url, turns_file) as proxy, httpx.Client(timeout=120) as client:
        for round_ in range(2):  # the second round meets the server's prompt cache
            for path, body in REQUESTS.items():
                response = client.post(proxy.url_for(llama_server.base_url + path),
                                       json={"model": "smollm2-135m", "stream": True, "temperature": 0, **body})
                assert response.status_code == 200
                answers[(round_, path)] = response.text
    turns = [json.loads(line) for line in turns_file.read_text().splitlines()]
    assert [t["api"] for t in turns] == ["openai-chat", "anthropic-messages", "openai-responses"] * 2
    for turn in turns:
        assert turn["ok"] and turn["streamed"], turn
        assert turn["tokens"]["prompt"] > 0 and 2 <= turn["tokens"]["output"] <= 24, turn
        assert turn["timing"]["ttft_s"] > 0 and turn["timing"]["tpot_s"] > 0, turn
    second = turns[3:]
    assert all(t["tokens"]["cached_prompt"] for t in second), second  # the same prompt again: served from cache
    assert "message_stop" in answers[(0, "/v1/messages")] and "response.completed" in answers[(0, "/v1/responses")]
    # The chat stream carries llama-server's own decode rate: the proxy's 1/tpot agrees with it.
    chat = turns[0]
    final = [json.loads(line[6:]) for line in answers[(0, "/v1/chat/completions")].splitlines()
             if line.startswith("data: {") and '"timings"' in line][-1]
    server_tps = final["timings"]["predicted_per_second"]
    assert 1 / chat["timing"]["tpot_s"] == pytest.approx(server_tps, rel=0.05)
