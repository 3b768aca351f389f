"""Endpoint adapters: one module per API shape, chosen by id.

See docs/internals.md for the contract and docs/measurement.md for what the
timing fields mean and how accurate they are.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from benchpack.adapters.base import Adapter, AdapterRequest, AdapterResult, StreamTrace
from benchpack.errors import ConfigError, Problem

if TYPE_CHECKING:
    import httpx

# Each adapter's module and class, imported only when chosen (so `benchpack --help` does not pay for httpx).
_ADAPTERS: dict[str, tuple[str, str]] = {
    "openai-chat": ("benchpack.adapters.openai_chat", "OpenAIChatAdapter"),
    "ollama-generate": ("benchpack.adapters.ollama_generate", "OllamaGenerateAdapter"),
    "anthropic-messages": ("benchpack.adapters.anthropic_messages", "AnthropicMessagesAdapter"),
    "openai-responses": ("benchpack.adapters.openai_responses", "OpenAIResponsesAdapter"),
}
ADAPTER_IDS: tuple[str, ...] = tuple(_ADAPTERS)
# The adapters that can send native tool calls (a case's `tools`).
TOOL_ADAPTER_IDS: tuple[str, ...] = ("openai-chat", "anthropic-messages", "openai-responses")


def adapter_module(adapter_id: str) -> str | None:
    """The module `get_adapter(adapter_id)` imports; None for an unknown id."""
    known = _ADAPTERS.get(adapter_id)
    return known[0] if known else None


def get_adapter(adapter_id: str, client: httpx.Client | None = None) -> Adapter:
    """The adapter for `adapter_id`; `client` replaces the one it would make (a pinned one, say)."""
    known = _ADAPTERS.get(adapter_id)
    if known is None:
        raise ConfigError(Problem("command line", "--adapter",
                                  f"unknown adapter {adapter_id!r}; choose one of {', '.join(ADAPTER_IDS)}"))
    module, name = known
    return getattr(importlib.import_module(module), name)(client)


__all__ = ["ADAPTER_IDS", "TOOL_ADAPTER_IDS", "Adapter", "AdapterRequest", "AdapterResult", "StreamTrace", "adapter_module", "get_adapter"]
