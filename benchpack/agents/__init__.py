"""Coding agents as they really run: the measuring proxy in front of them and the built-in agent recipes.

`proxy.MeasuringProxy` forwards every request an external agent sends to
the model endpoint byte for byte, streams every answer back byte for byte,
and records each one as a turn (`turns.py`, `agent-turns.jsonl`) with the
adapters' own timing (kernel receive stamps, first-chunk placement, usage
and cached-token accounting). `recipes.py` installs real agents from PyPI
into pinned tool environments of their own and says how to start them.

Above `adapters/` (it uses their timing code) and below `run/` (the runner
hands `proxy.proxy_factory` to the repo-task executor, which knows the
proxy only as a duck-typed context manager: repo_task/ stays a low layer).
"""
