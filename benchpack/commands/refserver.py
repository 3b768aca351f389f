"""`benchpack refserver --port N`: the built-in scripted LLM endpoint, in the foreground.

It answers OpenAI chat completions (`/v1/chat/completions`, plain or
streamed) and Ollama (`/api/generate`) with scripted replies on a known
schedule, so `benchpack run`, `compare`, `report` and bundles can be tried
without building a real server. Results made against it are demo data.
Stop it with Ctrl-C.
"""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    from benchpack.refserver.options import add_arguments

    parser = subparsers.add_parser(
        "refserver",
        help="start the built-in scripted LLM endpoint (OpenAI + Ollama) for trying benchpack without a server",
        description=__doc__.split("\n\n", 1)[1],
    )
    add_arguments(parser)
    parser.set_defaults(handler=handle, port=8081)


def handle(args: argparse.Namespace) -> int:
    from benchpack.refserver import server as refserver

    try:
        refserver.serve(refserver.config_from_args(args), args.host, args.port)
    except OSError as exc:
        from benchpack.errors import ConfigError, Problem

        raise ConfigError(Problem("refserver", "--port", f"cannot listen on {args.host}:{args.port}: "
                                  f"{exc.strerror or exc}")) from None
    return 0
