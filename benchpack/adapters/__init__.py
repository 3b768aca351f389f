"""Endpoint adapters: one module per API shape, chosen by id.

See docs/internals.md for the contract and docs/measurement.md for what the
timing fields mean and how accurate they are.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from benchpack.adapters.base import Adapter, AdapterRequest, AdapterResult, StreamTrace
from benchpack.errors import ConfigError, Problem

if TYPE_CHECKING:
    import httpx

ADAPTER_IDS: tuple[str, ...] = ("openai-chat", "ollama-generate", "anthropic-messages", "openai-responses")
# The adapters that can send native tool calls (a case's `tools`).
TOOL_ADAPTER_IDS: tuple[str, ...] = ("openai-chat", "anthropic-messages", "openai-responses")


def get_adapter(adapter_id: str, client: httpx.Client | None = None) -> Adapter:
    """The adapter for `adapter_id`; `client` replaces the one it would make (a pinned one, say)."""
    # Imported here so `benchpack --help` does not pay for httpx.
    if adapter_id == "openai-chat":
        from benchpack.adapters.openai_chat import OpenAIChatAdapter

        return OpenAIChatAdapter(client)
    if adapter_id == "ollama-generate":
        from benchpack.adapters.ollama_generate import OllamaGenerateAdapter

        return OllamaGenerateAdapter(client)
    if adapter_id == "anthropic-messages":
        from benchpack.adapters.anthropic_messages import AnthropicMessagesAdapter

        return AnthropicMessagesAdapter(client)
    if adapter_id == "openai-responses":
        from benchpack.adapters.openai_responses import OpenAIResponsesAdapter

        return OpenAIResponsesAdapter(client)
    raise ConfigError(Problem("command line", "--adapter",
                              f"unknown adapter {adapter_id!r}; choose one of {', '.join(ADAPTER_IDS)}"))


__all__ = ["ADAPTER_IDS", "TOOL_ADAPTER_IDS", "Adapter", "AdapterRequest", "AdapterResult", "StreamTrace", "get_adapter"]
