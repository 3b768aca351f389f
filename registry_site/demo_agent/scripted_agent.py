"""The demo's scripted coding agent: a real external agent process, three model turns, one fix.

Started by the external-agent harness (benchpack.repo_task) in the sandbox for the demo's coding
runs (registry_site/demo_data.py), it does what a coding agent does, in miniature: it asks the model
about the task, shows it the code it read, asks for the fix as a unified diff and applies whatever
diff the answer holds (`git apply`); an answer without one leaves the workspace as it was, and the
pack's verifier fails the task. Every request goes to the endpoint the task's context file names —
the measuring proxy — streamed, with the conversation growing turn by turn as a real agent's does,
so the task's row gets a real `agent_session` from the proxy: the scripted endpoint's speeds (set
from registry_site/demo_physics.py) as the proxy measured them.

The scripted endpoint picks each answer by the step marker in the prompt (its `match`); the markers
are `STEP_MARKERS`. Standard library only: it runs with whatever Python starts it, and imports
nothing from benchpack or the registry.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import urllib.request
from pathlib import Path

STEP_MARKERS = ("[demo-agent step 1]", "[demo-agent step 2]", "[demo-agent step 3]")
SYSTEM = ("You are a coding agent working in a repository. Think briefly, then act; when asked for the fix, "
          "answer with one fenced unified diff against the repository root.")
READ_FILE = "versionkit/version.py"  # what the agent "opens" after its first turn (the module the task is about)
_DIFF = re.compile(r"```diff\n(.*?)```", re.S)


def ask(endpoint: str, model: str, messages: list[dict], timeout_s: float = 60) -> str:
    """One streamed chat completion; the answer's text."""
    body = json.dumps({"model": model, "messages": messages, "stream": True, "max_tokens": 1024,
                       "stream_options": {"include_usage": True}}).encode()
    request = urllib.request.Request(endpoint, body, {"Content-Type": "application/json"})
    parts = []
    with urllib.request.urlopen(request, timeout=timeout_s) as response:
        for line in response:
            line = line.strip()
            if not line.startswith(b"data:") or line == b"data: [DONE]":
                continue
            event = json.loads(line[5:])
            for choice in event.get("choices") or []:
                parts.append((choice.get("delta") or {}).get("content") or "")
    return "".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name in ("--workspace", "--case", "--output-dir", "--repetition", "--context"):
        parser.add_argument(name)
    args = parser.parse_args(argv)
    context = json.loads(Path(args.context).read_text(encoding="utf-8"))
    endpoint, model = context["adapter"]["endpoint"], context["adapter"]["model"]
    workspace = Path(args.workspace)
    code = workspace / READ_FILE
    observation = code.read_text(encoding="utf-8") if code.is_file() else "(no such file)"
    first = f"{context['case']['prompt']}\n\n{STEP_MARKERS[0]} What do you look at first?"
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": first}]
    follow_ups = (f"{STEP_MARKERS[1]} Here is {READ_FILE}:\n\n{observation}\n\nWhat is wrong?",
                  f"{STEP_MARKERS[2]} Answer with the fix as one fenced unified diff.")
    answer = ask(endpoint, model, messages)
    for follow_up in follow_ups:
        messages += [{"role": "assistant", "content": answer}, {"role": "user", "content": follow_up}]
        answer = ask(endpoint, model, messages)
    found = _DIFF.search(answer)
    if found is None:
        print("the model's answer holds no diff: nothing applied", file=sys.stderr)
        return 0
    applied = subprocess.run(["git", "apply", "--whitespace=nowarn", "-"], input=found.group(1), text=True,
                             cwd=workspace, capture_output=True)
    print(applied.stderr or "applied the model's diff", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
