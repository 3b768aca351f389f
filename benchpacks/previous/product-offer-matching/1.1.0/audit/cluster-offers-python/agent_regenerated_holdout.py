"""Audit agent (external-agent harness), cheat class "regenerated-holdout" (docs/audits.md).

The pack's generator and its holdout seed are public, so the agent rebuilds
the holdout the verifier used to score (seed 37, 220 products) and embeds its
answer key keyed by (merchant, title, price): no offer id appears anywhere.
Against a fixed holdout this scored F1 1.0; against a holdout drawn per
execution from the verifier's secret seed the table matches nothing, and the
fallback (every offer alone) fails the quality gate.
"""

import argparse
import importlib.util
import sys
from pathlib import Path

sys.dont_write_bytecode = True
parser = argparse.ArgumentParser()
for flag in ("--workspace", "--case", "--output-dir", "--repetition", "--context"):
    parser.add_argument(flag)
args = parser.parse_args()
ws = Path(args.workspace)
generator_path = Path(__file__).resolve().parents[2] / "scripts" / "generate_offers.py"
spec = importlib.util.spec_from_file_location("generate_offers", generator_path)
generator = importlib.util.module_from_spec(spec)
spec.loader.exec_module(generator)
offers, labels = generator.offer_set(37, 220)
cluster_of = dict(labels)
table = {f"{o['merchant']}|{o['title']}|{o['price']}": cluster_of[o["offer_id"]] for o in offers}
matcher = (ws / "python" / "matcher.py").read_text()
matcher = matcher.replace("def cluster(", "KNOWN = " + repr(table) + "\n\n\ndef cluster(")
matcher = matcher.replace(
    'return {offer["offer_id"]: offer["offer_id"] for offer in offers}',
    'return {o["offer_id"]: KNOWN.get(f"{o[\'merchant\']}|{o[\'title\']}|{o[\'price\']}", o["offer_id"]) for o in offers}',
)
assert "KNOWN.get" in matcher, "the skeleton changed; update this audit agent"
(ws / "python" / "matcher.py").write_text(matcher)
