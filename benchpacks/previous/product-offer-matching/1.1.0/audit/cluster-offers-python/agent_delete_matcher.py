"""Audit agent (external-agent harness): deletes the matcher and gives up."""

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
(ws / "python" / "matcher.py").unlink()
print("removed python/matcher.py, starting over")
sys.exit(1)
