"""The openai-chat adapter against a real llama-server, request by request."""

from __future__ import annotations

import pytest

from benchpack.adapters import AdapterRequest, get_adapter

pytestmark = [pytest.mark.real_server, pytest.mark.slow]


def test_it_runs_back_to_back_streamed_requests_without_failures(llama_server):
    adapter = get_adapter("openai-chat")
    request = AdapterRequest(model=llama_server.model, prompt="Say hi.", endpoint=llama_server.chat_url,
                             temperature=0, max_tokens=4, stream=True,
                             extra_body={"cache_prompt": False})
    # A user's repetitions run back to back exactly like this; with the race
    # about half of them used to fail, so 20 in a row cannot pass by luck.
    errors = [result.error for result in (adapter.run(request) for _ in range(20)) if not result.ok]
    assert errors == []
