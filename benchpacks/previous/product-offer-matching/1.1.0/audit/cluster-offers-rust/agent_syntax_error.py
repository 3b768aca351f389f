"""Audit agent (external-agent harness): reference matcher with a syntax error: the crate does not build."""

import argparse
import sys
from pathlib import Path

sys.dont_write_bytecode = True
parser = argparse.ArgumentParser()
for flag in ("--workspace", "--case", "--output-dir", "--repetition", "--context"):
    parser.add_argument(flag)
args = parser.parse_args()
ws = Path(args.workspace)
here = Path(__file__).resolve().parent
source = (here / "good_main.rs").read_text().replace("fn find(parent", "fn find(parent: ", 1)
(ws / "rust" / "src" / "main.rs").write_text(source)
