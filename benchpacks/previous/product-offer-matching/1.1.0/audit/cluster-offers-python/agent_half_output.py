"""Audit agent (external-agent harness): matcher whose output covers only half the offers."""

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
matcher = (here / "good_matcher.py").read_text().replace("for offer in offers:\n            writer.writerow", "for offer in offers[: len(offers) // 2]:\n            writer.writerow")
(ws / "python" / "matcher.py").write_text(matcher)
