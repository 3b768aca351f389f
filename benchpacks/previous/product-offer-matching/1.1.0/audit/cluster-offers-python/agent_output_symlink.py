"""Audit agent (external-agent harness), cheat class "output-symlink" (docs/audits.md).

A good matcher whose output file is a symbolic link: it writes the clustering
into its working directory (a scratch copy bound at the same path as on the
host) and leaves `--out` pointing there. Any host-side read that follows the
link would read a file of the candidate's choosing; the verifier opens
outputs with O_NOFOLLOW and fails the case instead.
"""

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
matcher = (here / "good_matcher.py").read_text()
old = '    with open(args.out, "w", newline="", encoding="utf-8") as handle:'
assert old in matcher, "good_matcher.py changed; update this audit agent"
matcher = matcher.replace(old, '    import os\n    real = os.path.abspath("clusters-real.csv")\n'
                               '    os.symlink(real, args.out)\n    with open(real, "w", newline="", encoding="utf-8") as handle:')
(ws / "python" / "matcher.py").write_text(matcher)
