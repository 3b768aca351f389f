"""Audit agent (external-agent harness): writes a different valid matcher (exact variant keys, no union-find)."""

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
(ws / "python" / "matcher.py").write_text((here / "alt_matcher.py").read_text())
