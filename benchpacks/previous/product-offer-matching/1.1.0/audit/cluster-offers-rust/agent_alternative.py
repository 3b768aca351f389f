"""Audit agent (external-agent harness): reference algorithm with a looser price guard and an optimised dev profile."""

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
source = (here / "good_main.rs").read_text().replace("a.min(b) * 1.6 >= a.max(b)", "a.min(b) * 2.0 >= a.max(b)")
(ws / "rust" / "src" / "main.rs").write_text(source)
manifest = ws / "rust" / "Cargo.toml"
manifest.write_text(manifest.read_text() + "\n[profile.dev]\nopt-level = 1\n")
