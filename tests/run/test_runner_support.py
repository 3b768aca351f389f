"""Shared helpers for the runner/CLI tests: packs written as real manifests, a scripted adapter.

No tests live here; `test_runner*.py` and `test_cli_run.py` import it.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from benchpack.adapters.base import AdapterRequest, AdapterResult
from benchpack.packs.loader import Pack, load_pack
from benchpack.run.runner import RunOptions


def write_pack(root: Path, cases: list[str], *, warmup: int = 0, repetitions: int = 1,
               stream: bool = False, scoring: str = "", description: str = "Test pack", extra: str = "") -> Path:
    """A pack directory whose cases are `[[cases]]` bodies (TOML snippets)."""
    root.mkdir(parents=True, exist_ok=True)
    case_tables = "\n".join(f"[[cases]]\n{textwrap.dedent(body).strip()}\n" for body in cases)
    (root / "benchpack.toml").write_text(
        textwrap.dedent(
            f"""\
            [pack]
            id = "test-pack"
            version = "1.2.3"
            description = "{description}"

            [defaults]
            temperature = 0
            max_tokens = 16
            stream = {str(stream).lower()}
            warmup = {warmup}
            repetitions = {repetitions}
            """
        )
        + "\n" + case_tables + "\n" + textwrap.dedent(scoring) + "\n" + textwrap.dedent(extra),
        encoding="utf-8",
    )
    return root


def chat_case(case_id: str, prompt: str = "Say Paris.") -> str:
    return f'id = "{case_id}"\nkind = "chat"\nprompt = "{prompt}"'


def make_pack(tmp_path: Path, case_ids=("alpha", "beta"), **kwargs) -> Pack:
    return load_pack(write_pack(tmp_path / "pack", [chat_case(c) for c in case_ids], **kwargs))


def options(tmp_path: Path, **overrides) -> RunOptions:
    values = dict(adapter="openai-chat", model="test-model", endpoint="http://127.0.0.1:9/v1",
                  out=tmp_path / "out", host_label="test-host", run_metadata=None, probe_server=False)
    values.update(overrides)
    return RunOptions(**values)


def ok_result(request: AdapterRequest, text: str = "Paris is the capital.") -> AdapterResult:
    return AdapterResult(
        ok=True,
        error=None,
        output_text=text,
        reasoning_text="",
        timing={"wall_s": 0.25, "ttft_s": 0.05, "total_tps": 32.0, "tpot_s": 0.01},
        tokens={"prompt": 10, "output": 8},
        backend=None,
        request_payload={"model": request.model, "prompt": request.prompt},
        response_payload={"text": text},
    )


def failed_result(request: AdapterRequest, error: str = "connection refused") -> AdapterResult:
    return AdapterResult(False, error, "", "", {"wall_s": 0.001}, {}, None,
                         {"model": request.model}, None)


class ScriptedAdapter:
    """Answers each call with the next scripted behaviour (default: an ok result).

    A behaviour is a callable `request -> AdapterResult`, or an exception
    (class or instance) to raise.
    """

    id = "openai-chat"

    def __init__(self, script: dict[int, object] | None = None, default=ok_result):
        self.script = script or {}
        self.default = default
        self.requests: list[AdapterRequest] = []

    def run(self, request: AdapterRequest) -> AdapterResult:
        self.requests.append(request)
        behaviour = self.script.get(len(self.requests), self.default)
        if isinstance(behaviour, BaseException) or (
            isinstance(behaviour, type) and issubclass(behaviour, BaseException)
        ):
            raise behaviour
        return behaviour(request)
