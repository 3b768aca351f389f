"""Offer matcher: one cluster per exact variant key (no transitive merging)."""

from __future__ import annotations

import argparse
import csv
import re

COLORS = {
    "black": "black", "schwarz": "black", "noir": "black", "midnight": "black",
    "white": "white", "weiss": "white", "blanc": "white",
    "blue": "blue", "blau": "blue", "navy": "blue",
    "green": "green", "grun": "green", "mint": "green",
    "silver": "silver", "silber": "silver",
}  # fmt: skip
BRAND_ALIASES = {"de'longhi": "delonghi", "western": "wd", "micron": "crucial"}
CAPACITY_RE = re.compile(r"\b(\d+)\s*(gb|tb|g)\b")
NOISE = {"2024"}


def normalize(text: str) -> str:
    text = text.lower().replace("ß", "ss").replace("ü", "u").replace("ö", "o").replace("ä", "a")
    return re.sub(r"[^a-z0-9.'/ -]+", " ", text)


def brand_of(offer: dict, known: set[str]) -> str:
    field = normalize(offer["brand"]).split()
    if field:
        return BRAND_ALIASES.get(field[0], field[0])
    for word in normalize(offer["title"]).split():
        word = BRAND_ALIASES.get(word, word)
        if word in known:
            return word
    return ""


def capacity_of(title: str) -> str:
    for number, unit in CAPACITY_RE.findall(title):
        if unit == "tb":
            return f"{number}tb"
        if int(number) >= 32:
            return f"{int(number) // 1000}tb" if int(number) >= 1000 else f"{number}gb"
    return ""


def color_of(title: str) -> str:
    for word in title.split():
        if word in COLORS:
            return COLORS[word]
    return ""


def model_tokens(title: str) -> set[str]:
    found = set()
    for word in CAPACITY_RE.sub(" ", title).split():
        compact = re.sub(r"[^a-z0-9]", "", word)
        if len(compact) >= 3 and compact not in NOISE and re.search(r"\d", compact):
            found.add(compact)
    return found


def cluster(offers: list[dict]) -> dict[str, str]:
    """Exact variant key: brand, category, capacity, colour and the longest model-like token."""
    known = {BRAND_ALIASES.get(w[0], w[0]) for w in (normalize(o["brand"]).split() for o in offers) if w}
    result = {}
    for offer in offers:
        title = normalize(offer["title"])
        tokens = sorted(model_tokens(title), key=lambda t: (-len(t), t))
        if not tokens:
            result[offer["offer_id"]] = "single-" + offer["offer_id"]
            continue
        key = (brand_of(offer, known), offer["category"], capacity_of(title), color_of(title), tokens[0])
        result[offer["offer_id"]] = "|".join(key)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--offers", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    with open(args.offers, newline="", encoding="utf-8") as handle:
        offers = list(csv.DictReader(handle))
    clusters = cluster(offers)
    with open(args.out, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(["offer_id", "cluster_id"])
        for offer in offers:
            writer.writerow([offer["offer_id"], clusters[offer["offer_id"]]])


if __name__ == "__main__":
    main()
