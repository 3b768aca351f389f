"""Audit agent (external-agent harness): clusters by brand field + category only (merges every model and variant)."""

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
main = ws / "rust" / "src" / "main.rs"
source = main.read_text().replace(
    "offers.iter().map(|o| (o.offer_id.clone(), o.offer_id.clone())).collect()",
    "offers.iter().map(|o| (o.offer_id.clone(), format!(\"{}|{}\", o.brand.to_lowercase(), o.category))).collect()",
)
main.write_text(source)
