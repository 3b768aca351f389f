"""The run path imports only what a run uses (docs/measurement.md, "The whole process's cost").

`benchpack run` is often short: a hundred requests. What the process imports
before its first request is then a large share of its CPU per chunk, so the
modules a plain-http run never needs stay out: httpx's command-line client
(click, rich, pygments), rich (only a terminal's bar), numpy (only the summary's bootstrap bands, after the
last request), and httpx's own transport with its SSL context (https only).
"""

import json
import subprocess
import sys

# jsonschema is also kept out of the pack loader, on the CLI's branch (h18); scoring imports it only for a
# json-schema check. Importing `ssl` is cheap; building a context (httpcore's transport) is what costs.
HEAVY = ("click", "rich", "pygments", "numpy", "httpx._main", "httpcore")


def imported_by(code: str) -> list[str]:
    probe = (f"{code}\nimport sys, json\n"
             f"print(json.dumps([m for m in {HEAVY!r} if sys.modules.get(m) is not None]))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_runner_and_adapters_import_nothing_heavy():
    assert imported_by("import benchpack.run.runner, benchpack.adapters.openai_chat, benchpack.run.progress") == []


def test_building_the_adapter_client_and_a_plain_progress_sink_imports_nothing_heavy():
    code = ("import io\nfrom benchpack.adapters import get_adapter\nfrom benchpack.run.progress import progress_for\n"
            "from benchpack.run.server_info import probe_client\n"
            "a = get_adapter('openai-chat'); a.client; probe_client().close()\nprogress_for(1, 0, io.StringIO())")
    assert imported_by(code) == []


def test_httpx_still_works_without_its_cli_module():
    code = "import benchpack, httpx\nassert httpx.Client and httpx.Timeout(1.0)\nassert callable(httpx.main)"
    assert imported_by(code) == []
