"""Native tool calls: one neutral definition, each API's own shape, and calls assembled from stream fragments.

A pack declares a case's tools once (docs/format.md, "Tools"):
`[{"name", "description", "parameters": <JSON schema>}]` and `tool_choice`
`"auto" | "required" | "none" | {"name": "<tool>"}`. Each adapter sends them
as its API expects:

* OpenAI chat: `tools: [{"type": "function", "function": {"name", "description", "parameters"}}]`,
  `tool_choice: "auto" | "required" | "none" | {"type": "function", "function": {"name"}}`;
* Anthropic Messages: `tools: [{"name", "description", "input_schema"}]`,
  `tool_choice: {"type": "auto" | "any" | "none"} | {"type": "tool", "name"}`;
* OpenAI Responses: `tools: [{"type": "function", "name", "description", "parameters"}]`,
  `tool_choice: "auto" | "required" | "none" | {"type": "function", "name"}`.

Streams send a call in pieces (the name first, then argument text in
fragments); `ToolCalls` collects them by the API's own key (chat: the
`index`, Anthropic: the content block index, Responses: the item id) and
gives the structured calls a row records and the `tool-call` scorer reads.
"""

from __future__ import annotations

import json
from typing import Any

NEUTRAL_CHOICES = ("auto", "required", "none")


def _definition(tool: dict) -> tuple[str, str | None, dict]:
    return tool["name"], tool.get("description"), tool.get("parameters") or {"type": "object", "properties": {}}


def chat_tools(tools: list, choice: Any) -> dict:
    """`tools` / `tool_choice` body fields for OpenAI chat completions."""
    body: dict[str, Any] = {"tools": []}
    for tool in tools:
        name, description, parameters = _definition(tool)
        function = {"name": name, **({"description": description} if description else {}), "parameters": parameters}
        body["tools"].append({"type": "function", "function": function})
    if isinstance(choice, dict):
        body["tool_choice"] = {"type": "function", "function": {"name": choice["name"]}}
    elif choice is not None:
        body["tool_choice"] = choice
    return body


def anthropic_tools(tools: list, choice: Any) -> dict:
    """`tools` / `tool_choice` body fields for Anthropic Messages."""
    body: dict[str, Any] = {"tools": []}
    for tool in tools:
        name, description, parameters = _definition(tool)
        body["tools"].append({"name": name, **({"description": description} if description else {}),
                              "input_schema": parameters})
    if isinstance(choice, dict):
        body["tool_choice"] = {"type": "tool", "name": choice["name"]}
    elif choice is not None:
        body["tool_choice"] = {"type": {"required": "any"}.get(choice, choice)}
    return body


def responses_tools(tools: list, choice: Any) -> dict:
    """`tools` / `tool_choice` body fields for the OpenAI Responses API."""
    body: dict[str, Any] = {"tools": []}
    for tool in tools:
        name, description, parameters = _definition(tool)
        body["tools"].append({"type": "function", "name": name,
                              **({"description": description} if description else {}), "parameters": parameters})
    if isinstance(choice, dict):
        body["tool_choice"] = {"type": "function", "name": choice["name"]}
    elif choice is not None:
        body["tool_choice"] = choice
    return body


def structured_arguments(text: str) -> Any:
    """A call's arguments as the row records them: the parsed JSON, or the text as sent when it is not JSON."""
    try:
        return json.loads(text) if text.strip() else {}
    except ValueError:
        return text


class ToolCalls:
    """Tool calls assembled from a stream's fragments, in the order they started."""

    __slots__ = ("_calls",)

    def __init__(self) -> None:
        self._calls: dict[Any, dict] = {}  # insertion order is start order

    def __bool__(self) -> bool:
        return bool(self._calls)

    def add(self, key: Any, *, call_id: Any = None, name: Any = None, arguments: Any = None) -> None:
        """Start or extend the call `key`: a name and id when they come, argument text appended."""
        call = self._calls.get(key)
        if call is None:
            call = self._calls[key] = {"id": None, "name": None, "arguments": []}
        if isinstance(call_id, str) and call_id and call["id"] is None:
            call["id"] = call_id
        if isinstance(name, str) and name and name != call["name"]:
            # Some servers stream the name in pieces too; one that repeats it whole is not doubled.
            call["name"] = name if call["name"] is None else call["name"] + name
        if isinstance(arguments, str) and arguments:
            call["arguments"].append(arguments)

    def complete(self, key: Any, arguments: Any) -> None:
        """The whole argument text a stream repeats at a call's end; used only when no fragment came."""
        call = self._calls.get(key)
        if call is not None and not call["arguments"] and isinstance(arguments, str):
            call["arguments"].append(arguments)

    def result(self) -> list[dict]:
        return [{"id": call["id"], "name": call["name"], "arguments": structured_arguments("".join(call["arguments"]))}
                for call in self._calls.values()]
