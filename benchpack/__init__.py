"""Benchpack: versioned LLM benchmark packs, a trustworthy runner, and a results registry."""

__version__ = "0.1.0"

import sys as _sys

# `import httpx` also imports httpx's own command-line client (httpx._main: click, rich, pygments), about
# half of httpx's import time, for a `httpx` command no benchpack process runs; on a short `benchpack run`
# that is a visible share of its whole CPU (docs/measurement.md). A None entry in sys.modules makes that one
# import fail, and httpx then defines its documented stand-in `httpx.main` (what it does when the CLI extras
# are not installed). Nothing else changes; a process that imported httpx before benchpack keeps its CLI.
_sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]
