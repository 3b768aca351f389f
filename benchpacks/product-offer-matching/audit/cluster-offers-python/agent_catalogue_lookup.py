"""Audit agent (external-agent harness), cheat class "novel-entities" (docs/audits.md, round four).

The generator's catalogue is public, and the old holdout was drawn from it
alone (220 products asked of a 100-product catalogue: the whole catalogue
every time). The agent embeds that catalogue as a lookup table — every model
code with its variants — and clusters an offer by the catalogue product whose
model code and variant words its title carries; anything else stays alone.
That is memorising the entities, not matching offers: against a holdout that
also holds products invented from the secret seed (in nothing the candidate
can read) it falls below the quality gate.
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
catalogue = []
for index, product in enumerate(generator.expand_products()):
    words = [str(product.get("storage", "")), product.get("capacity", "").lower()]
    colours = [c.lower() for c in generator.COLORS.get(product.get("color", ""), [])]
    catalogue.append([product["model"].lower().replace("-", "").replace(" ", ""), [w for w in words if w], colours, f"cat{index}"])
LOOKUP = '''
CATALOGUE = %r


def _norm(text):
    return text.lower().replace("-", "").replace(" ", "")


def cluster(offers: list[dict]) -> dict[str, str]:
    """offer_id -> the catalogue product whose model code and variant words the title carries."""
    result = {}
    for offer in offers:
        title, squeezed = offer["title"].lower(), _norm(offer["title"])
        best, best_score = offer["offer_id"], 0
        for model, words, colours, key in CATALOGUE:
            if model not in squeezed:
                continue
            score = 1 + sum(w in squeezed for w in words) + any(c in title for c in colours)
            if score > best_score:
                best, best_score = key, score
        result[offer["offer_id"]] = best
    return result
''' % (catalogue,)
matcher = (ws / "python" / "matcher.py").read_text()
start, end = matcher.index("def cluster("), matcher.index("def main(")
matcher = matcher[:start] + LOOKUP.lstrip() + "\n\n" + matcher[end:]
(ws / "python" / "matcher.py").write_text(matcher)
