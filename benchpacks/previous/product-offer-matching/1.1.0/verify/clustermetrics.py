"""B-cubed and pairwise precision/recall/F1 of a predicted clustering against gold labels (stdlib only)."""

from __future__ import annotations

from collections import Counter, defaultdict
from math import comb


def _f1(p: float, r: float) -> float:
    return 0.0 if p + r == 0 else 2 * p * r / (p + r)


def bcubed(pred: dict[str, str], gold: dict[str, str]) -> dict[str, float]:
    """Per-item precision/recall averaged over gold items; items missing from pred are singletons."""
    pred = {item: pred.get(item, f"__missing__{item}") for item in gold}
    overlap = Counter((pred[i], gold[i]) for i in gold)
    pred_size, gold_size = Counter(pred.values()), Counter(gold.values())
    precision = sum(overlap[(pred[i], gold[i])] / pred_size[pred[i]] for i in gold) / len(gold)
    recall = sum(overlap[(pred[i], gold[i])] / gold_size[gold[i]] for i in gold) / len(gold)
    return {"precision": precision, "recall": recall, "f1": _f1(precision, recall)}


def pairwise(pred: dict[str, str], gold: dict[str, str]) -> dict[str, float]:
    """Precision/recall over same-cluster item pairs (counted, not enumerated)."""
    pred = {item: pred.get(item, f"__missing__{item}") for item in gold}
    cells = Counter((pred[i], gold[i]) for i in gold)
    true_pairs = sum(comb(n, 2) for n in cells.values())
    pred_pairs = sum(comb(n, 2) for n in Counter(pred.values()).values())
    gold_pairs = sum(comb(n, 2) for n in Counter(gold.values()).values())
    precision = true_pairs / pred_pairs if pred_pairs else 0.0
    recall = true_pairs / gold_pairs if gold_pairs else 0.0
    return {"precision": precision, "recall": recall, "f1": _f1(precision, recall)}


def scores(pred: dict[str, str], gold: dict[str, str]) -> dict[str, dict[str, float]]:
    return {"bcubed": bcubed(pred, gold), "pairwise": pairwise(pred, gold)}


def clusters_of(assignment: dict[str, str]) -> dict[str, list[str]]:
    groups: dict[str, list[str]] = defaultdict(list)
    for item, cluster in assignment.items():
        groups[cluster].append(item)
    return groups
