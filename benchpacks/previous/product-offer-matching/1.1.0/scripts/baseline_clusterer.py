"""The deliberately simple baseline of D-036: brand+category blocking,
title-token Jaccard >= THRESHOLD inside a block, union-find over matching pairs.

    python scripts/baseline_clusterer.py [--offers CSV --labels CSV]

prints B-cubed and pairwise F1 (default: the hidden holdout set). Its score
is recorded in README.md; the pass thresholds are 0.70 / 0.20.
"""

from __future__ import annotations

import argparse
import csv
import re
import sys
from collections import defaultdict
from itertools import combinations
from pathlib import Path

PACK = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PACK / "verify"))
sys.dont_write_bytecode = True

from clustermetrics import scores  # noqa: E402

THRESHOLD = 0.5


def tokens(title: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", title.lower()))


def cluster(offers: list[dict]) -> dict[str, str]:
    parent = {o["offer_id"]: o["offer_id"] for o in offers}

    def find(x: str) -> str:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    blocks: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for offer in offers:
        blocks[(offer["brand"].strip().lower(), offer["category"])].append(offer)
    for block in blocks.values():
        toks = [(o["offer_id"], tokens(o["title"])) for o in block]
        for (a, ta), (b, tb) in combinations(toks, 2):
            if ta and tb and len(ta & tb) / len(ta | tb) >= THRESHOLD:
                parent[find(a)] = find(b)
    return {o["offer_id"]: find(o["offer_id"]) for o in offers}


def read_csv(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def main() -> None:
    parser = argparse.ArgumentParser()
    # the visible set by default: holdouts are drawn per execution by the verifier and never shipped
    parser.add_argument("--offers", type=Path, default=PACK / "fixtures" / "offer-matcher-repo" / "data" / "offers.csv")
    parser.add_argument("--labels", type=Path, default=PACK / "verify" / "labels" / "offers_labels.csv")
    args = parser.parse_args()
    gold = {row["offer_id"]: row["cluster_id"] for row in read_csv(args.labels)}
    result = scores(cluster(read_csv(args.offers)), gold)
    print(f"B-cubed F1 {result['bcubed']['f1']:.3f}  pairwise F1 {result['pairwise']['f1']:.3f}")


if __name__ == "__main__":
    main()
