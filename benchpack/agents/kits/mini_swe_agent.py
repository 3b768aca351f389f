"""Runs the real mini-swe-agent on one benchpack task (the `mini-swe-agent` recipe, docs/agents.md).

Started by the external-agent harness with the agent's own Python (its
pinned tool environment, never benchpack's), inside the sandbox:

    <venv>/bin/python mini_swe_agent.py --agent-home <venv> --step-limit N \
        --workspace W --case C --output-dir O --repetition R --context CONTEXT

It imports nothing from benchpack. It reads the model, the endpoint (the
measuring proxy's, or the sandbox's loopback relay to it) and the task from
the context file and runs mini-swe-agent's own `DefaultAgent` with its own
`LocalEnvironment` in the workspace and its own text-based action format
(`mini_textbased.yaml`: one ```mswea_bash_command block per answer). Two
settings differ from mini-swe-agent's defaults, both so the run can be
measured and bounded: the model is asked to stream (as interactive agents
do, so every turn has a TTFT and a decode rate; litellm rebuilds the whole
answer from the chunks before the agent sees it), and cost tracking ignores
the unknown local model's price. `--step-limit` bounds the model calls.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

# litellm would fetch its model price list from the network at import: the sandbox has none.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("MSWEA_COST_TRACKING", "ignore_errors")
os.environ.setdefault("MSWEA_CONFIGURED", "true")
os.environ.setdefault("MSWEA_SILENT_STARTUP", "1")


def api_base(endpoint: str) -> str:
    base = endpoint.rstrip("/")
    for suffix in ("/chat/completions", "/completions"):
        if base.endswith(suffix):
            return base[: -len(suffix)]
    return base if base.endswith("/v1") else base + "/v1"


def main() -> int:
    parser = argparse.ArgumentParser()
    for name in ("--workspace", "--case", "--output-dir", "--repetition", "--context", "--agent-home"):
        parser.add_argument(name)
    parser.add_argument("--step-limit", type=int, default=20)
    parser.add_argument("--command-timeout", type=int, default=60)
    args = parser.parse_args()
    context = json.loads(Path(args.context).read_text(encoding="utf-8"))
    adapter = context["adapter"]

    import litellm
    import yaml
    from minisweagent.agents.default import DefaultAgent
    from minisweagent.config import builtin_config_dir
    from minisweagent.environments.local import LocalEnvironment
    from minisweagent.models.litellm_textbased_model import LitellmTextbasedModel

    class StreamingTextModel(LitellmTextbasedModel):
        """mini-swe-agent's text-based model, asking the server to stream (the answer it sees is the same)."""

        def _query(self, messages, **kwargs):
            chunks = list(litellm.completion(model=self.config.model_name, messages=messages, stream=True,
                                             stream_options={"include_usage": True},
                                             **(self.config.model_kwargs | kwargs)))
            return litellm.stream_chunk_builder(chunks, messages=messages)

    config = yaml.safe_load((builtin_config_dir / "mini_textbased.yaml").read_text(encoding="utf-8"))
    model_kwargs = {"api_base": api_base(adapter["endpoint"]), "api_key": "benchpack-local",
                    "temperature": (adapter.get("defaults") or {}).get("temperature") or 0.0}
    max_tokens = (adapter.get("defaults") or {}).get("max_tokens")
    if max_tokens:
        model_kwargs["max_tokens"] = max_tokens
    model = StreamingTextModel(**{**config.get("model", {}), "model_name": f"openai/{adapter['model']}",
                                  "model_kwargs": model_kwargs, "cost_tracking": "ignore_errors"})
    env = LocalEnvironment(**{**config.get("environment", {}), "cwd": args.workspace,
                              "timeout": args.command_timeout})
    agent_config = {k: v for k, v in config.get("agent", {}).items() if k not in ("mode",)}
    agent_config.update(step_limit=args.step_limit, cost_limit=0)
    agent = DefaultAgent(model, env, **agent_config)
    try:
        result = agent.run(context["case"]["prompt"])
    except Exception as exc:  # the agent's own failure is the task's outcome, not the harness's
        print(f"mini-swe-agent stopped: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    status = result.get("exit_status")
    print(f"mini-swe-agent: exit_status={status} model_calls={agent.n_calls}")
    return 0 if status == "Submitted" else 3


if __name__ == "__main__":
    raise SystemExit(main())
