"""`benchpack import TOOL FILE --out BUNDLE_DIR`: another tool's result file → a bundle labelled as imported.

(The module is named after its command, as every command module is; `import`
is a Python keyword, so `benchpack.cli` loads it with importlib only.)
"""

from __future__ import annotations

import argparse
from pathlib import Path

TOOLS = ("vllm", "guidellm", "aiperf", "llama-bench", "harbor")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "import", help="turn another tool's result file into a bundle labelled 'imported from TOOL VERSION'",
        description="Read a result file another benchmark tool wrote (vLLM `bench serve --save-result` JSON, "
        "GuideLLM benchmarks.json, AIPerf profile_export*.json[l], llama-bench -o json|jsonl) and write a "
        "validated bundle. Figures whose definitions agree with Benchpack's metric registry are mapped onto it; "
        "the rest keep the tool's own names (docs/interop.md). The bundle is labelled as imported everywhere "
        "and is never ranked against Benchpack-measured runs. A bad file is refused naming the field, and "
        "nothing is written.")
    parser.add_argument("tool", choices=TOOLS, help="which tool wrote FILE")
    parser.add_argument("file", type=Path, metavar="FILE", help="the tool's result file (harbor: the job directory)")
    parser.add_argument("--out", type=Path, required=True, help="the bundle directory to create (must not exist)")
    parser.add_argument("--hardware", metavar="TEXT|FILE",
                        help="the machine that served the model: a hardware.json Benchpack wrote on it, or a "
                        "description; without it the bundle says the hardware is unknown")
    parser.add_argument("--runtime", metavar="'NAME VERSION'",
                        help="the inference server, e.g. 'llama.cpp b6123' (the tools do not record it)")
    parser.add_argument("--model", help="the model's name, when the file's is not the one to publish")
    parser.add_argument("--tool-version", help="the tool's version, for files that do not record it (vLLM)")
    parser.add_argument("--exported", type=Path, metavar="DIR",
                        help="harbor: the `benchpack export harbor` directory the job ran (its dataset.toml "
                        "binds each trial to an exported task by digest)")
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    if args.tool == "harbor":
        from benchpack.interop.harbor_import import import_job

        out, summary = import_job(args.file, args.out, exported=args.exported, hardware=args.hardware,
                                  runtime=args.runtime)
        print(f"{out}: {summary}")
        return 0
    from benchpack.interop.bundle import import_file

    out, imported = import_file(args.tool, args.file, args.out, tool_version=args.tool_version,
                                hardware=args.hardware, runtime=args.runtime, model=args.model)
    print(f"{out}: {len(imported.rows)} rows, {imported.label}")
    unknown = [item for item in imported.unknown]
    if unknown:
        print(f"not recorded by {imported.tool}: {', '.join(unknown)} (the bundle says so)")
    return 0
