"""Audit agent (external-agent harness): writes the reference matcher."""

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
(ws / "python" / "matcher.py").write_text((here / "good_matcher.py").read_text())
