"""Audit agent (external-agent harness): replaces the placeholder with the D-036 title-Jaccard baseline."""

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
source = (here.parent.parent / "scripts" / "baseline_clusterer.py").read_text()
matcher = (ws / "python" / "matcher.py").read_text()
body = source[source.index("THRESHOLD = 0.5"):source.index("def read_csv")]
matcher = matcher.replace("import csv\n", "import csv\nimport re\nfrom collections import defaultdict\nfrom itertools import combinations\n")
start, end = matcher.index("def cluster("), matcher.index("def main(")
(ws / "python" / "matcher.py").write_text(matcher[:start] + body + "\n" + matcher[end:])
