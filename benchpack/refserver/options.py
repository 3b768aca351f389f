"""The options of `benchpack refserver` and `python -m benchpack.refserver.server`.

Kept apart from server.py (http.server, the timed writer) because
`benchpack --help` builds every sub-command's parser and must stay fast
(docs/cli-startup.md).
"""

from __future__ import annotations

import argparse

SCENARIOS = ("ok", "reject-stream-options", "http-500", "close-mid-stream", "hang")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `benchpack refserver` and `python -m benchpack.refserver.server`."""
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port (printed on start)")
    parser.add_argument("--config", help="JSON file with DEFAULT_CONFIG keys, or - for stdin")
    parser.add_argument("--reply-file", action="append", default=[],
                        help="a file whose text is one scripted reply (repeat for several; cycled)")
    parser.add_argument("--ttft-ms", type=float, help="time to the first token (default 20)")
    parser.add_argument("--itl-ms", type=float, help="time between tokens (default 2)")
    parser.add_argument("--burst", action="store_true",
                        help="send each streamed reply in one write, every token at once (default: spaced)")
    parser.add_argument("--scenario", choices=SCENARIOS, help="fail the way real servers fail (default ok)")
    parser.add_argument("--like", choices=("llama-server",),
                        help="describe itself as llama-server does (GET /props, /v1/models) and keep a prompt "
                             "cache that cold prompts bypass")
