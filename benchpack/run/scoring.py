"""Deterministic scoring of one model output (format spec, "Scoring").

`score` is pure: it takes the effective `Scoring` of a case and the output
text and returns the row's `scoring` envelope. `verify-script` is run by
`repo_task` (it needs a workspace), and `llm-judge` is refused by
`check_runnable` before a single request is sent (D-004: a judge is never
run implicitly, and this implementation has none).
"""

from __future__ import annotations

import json
import re

from benchpack.errors import PackError, Problem
from benchpack.packs.loader import Pack, Scoring

# Modes score() evaluates; the others are refused up front or scored elsewhere.
OUTPUT_MODES = ("contains", "regex", "equals", "json-schema", "tool-call")


def check_runnable(pack: Pack) -> None:
    """Refuse a pack whose scoring this runner cannot compute, before any request."""
    problems = []
    for index, case in enumerate(pack.cases):
        if case.scoring is not None and case.scoring.mode == "llm-judge":
            field = f"cases[{index}].scoring.mode" if "scoring" in case.raw else "scoring.mode"
            problems.append(
                Problem(
                    pack.manifest_path.name,
                    field,
                    f"llm-judge scoring is reserved and not implemented (case {case.id}); nothing was run",
                )
            )
    if problems:
        raise PackError(problems)


def score(scoring: Scoring | None, output_text: str, tool_calls: list | None = None,
          tools: tuple | list = ()) -> dict | None:
    """The `scoring` envelope for a row: None when nothing is scored.

    `mode = "none"` gives None, like a pack without scoring, so rows show
    `"scoring": null` exactly as the existing result directories do.
    `tool-call` is scored from the structured `tool_calls` only, never from the text.
    """
    if scoring is None or scoring.mode == "none":
        return None
    if scoring.mode == "tool-call":
        return score_tool_calls(scoring, tool_calls, tools)
    if scoring.mode == "contains":
        return _envelope("contains", _required(scoring.expected, "contains", "expected") in output_text)
    if scoring.mode == "regex":
        pattern = _required(scoring.pattern, "regex", "pattern")
        return _envelope("regex", re.search(pattern, output_text) is not None)
    if scoring.mode == "equals":
        expected = _required(scoring.expected, "equals", "expected")
        return _envelope("equals", output_text.strip() == expected.strip())
    if scoring.mode == "json-schema":
        return _score_json_schema(_required(scoring.schema, "json-schema", "schema"), output_text)
    raise ValueError(f"scoring mode {scoring.mode!r} is not computed from output text")


FAILED_REQUEST_ERROR = "not scored as passed: the request failed (the output may be partial)"


def never_passed_when_failed(scoring_envelope: dict | None, request_ok: bool) -> dict | None:
    """A row whose request failed (`ok: false`) never counts as passed.

    A broken stream can still carry enough partial text (or a partial patch)
    to satisfy a check; such a row keeps its mode and reads `passed: false`
    with the reason, so pass rates count it as a failure, not a success.
    """
    if request_ok or not isinstance(scoring_envelope, dict) or scoring_envelope.get("passed") is not True:
        return scoring_envelope
    return {**scoring_envelope, "passed": False, "error": FAILED_REQUEST_ERROR}


def _required(value, mode: str, key: str):
    if value is None:
        raise ValueError(f"scoring mode {mode!r} needs {key!r}")
    return value


def _envelope(mode: str, passed: bool, error: str | None = None) -> dict:
    envelope: dict = {"mode": mode, "passed": passed}
    if error is not None:
        envelope["error"] = error
    return envelope


def _reject_constant(name: str):
    raise ValueError(f"{name} is not valid JSON")


def _score_json_schema(schema: dict, output_text: str) -> dict:
    try:
        instance = json.loads(output_text, parse_constant=_reject_constant)
    except ValueError as exc:  # JSONDecodeError is a ValueError
        return _envelope("json-schema", False, f"output is not valid JSON: {exc}")
    # Imported here: only json-schema packs need it, and it is a tenth of a second of every other run's CPU.
    import jsonschema
    from jsonschema.exceptions import best_match

    error = _schema_error(schema, instance)
    return _envelope("json-schema", error is None, error)


def _schema_error(schema: dict, instance) -> str | None:
    """The first mismatch of `instance` against `schema` as `path: message`, or None when it validates."""
    # Imported here: only packs with a schema need it, and it is a tenth of a second of every other run's CPU.
    import jsonschema
    from jsonschema.exceptions import best_match

    validator_class = jsonschema.validators.validator_for(schema)
    try:
        error = best_match(validator_class(schema).iter_errors(instance))
    except Exception as exc:  # e.g. an unresolvable $ref: a failed score, never a crashed run
        return f"schema could not be applied: {exc}"
    return None if error is None else f"{error.json_path}: {error.message}"


def _json_equal(a, b) -> bool:
    """JSON-value equality: true is not 1, 1 is 1.0, objects and arrays compared member by member."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(map(_json_equal, a, b))
    return type(a) is type(b) and a == b


def score_tool_calls(scoring: Scoring, tool_calls: list | None, tools: tuple | list = ()) -> dict:
    """`tool-call`: the response's structured calls must include one to `scoring.tool_name` whose arguments
    are a JSON object, valid against `scoring.schema` (else the tool's own `parameters` schema from `tools`,
    the case's neutral definitions) and carrying every `scoring.tool_arguments` value. The first call with
    that name is judged; text output plays no part."""
    calls = [c for c in tool_calls or () if isinstance(c, dict)]
    if not calls:
        return _envelope("tool-call", False, "no tool call in the response")
    call = next((c for c in calls if c.get("name") == scoring.tool_name), None)
    if call is None:
        named = ", ".join(repr(c.get("name")) for c in calls)
        return _envelope("tool-call", False, f"no call to {scoring.tool_name!r} (called {named})")
    arguments = call.get("arguments")
    if not isinstance(arguments, dict):
        return _envelope("tool-call", False, f"arguments are not a JSON object: {str(arguments)[:200]!r}")
    schema = scoring.schema
    if schema is None:
        schema = next((t.get("parameters") for t in tools if t.get("name") == scoring.tool_name), None)
    if schema is not None:
        error = _schema_error(schema, arguments)
        if error is not None:
            return _envelope("tool-call", False, f"arguments {error}")
    for key, expected in (scoring.tool_arguments or {}).items():
        if key not in arguments:
            return _envelope("tool-call", False, f"arguments lack {key!r}")
        if not _json_equal(arguments[key], expected):
            return _envelope("tool-call", False, f"arguments.{key} is {arguments[key]!r}, expected {expected!r}")
    return _envelope("tool-call", True)
