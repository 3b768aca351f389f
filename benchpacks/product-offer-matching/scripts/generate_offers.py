"""Deterministic synthetic offer sets for product-offer-matching (seeded, stdlib only).

Keeps the real difficulty of merchant feeds without their leaks:
* titles carry the model token, brand, family and variant attributes, but
  merchants abbreviate, reorder, add marketing words, drop parts and make typos;
* variants of one family (storage, colour, size) are different products with
  near-identical titles and nearby prices: the hard negatives;
* brand fields are sometimes empty or spelled differently; prices are noisy
  and sometimes outliers (bundles, refurbished);
* NO GTIN/EAN/MPN field, NO image_url or any other per-product id (D-035,
  D-038); offer ids are assigned after shuffling, so ids and row order carry
  no cluster information.

Writes (re-running reproduces byte-identical files):
  fixtures/offer-matcher-repo/data/offers.csv      unlabeled, what the matcher is tuned on
  fixtures/offer-matcher-repo/data/dev_offers.csv  small labeled dev set (+ dev_labels.csv)
  verify/labels/offers_labels.csv                  hidden labels for data/offers.csv
The holdout is not written: the verifier draws it for every execution with
`offer_set(<secret seed>, n, novel=k)` (verify/score_clusters.py): a drawn
sample of the catalogue plus `k` **novel** products — invented brands,
families and model codes made from the secret seed, which appear in nothing
the candidate can read (not in this catalogue, not in data/).
"""

from __future__ import annotations

import csv
import random
from pathlib import Path

PACK = Path(__file__).resolve().parent.parent
COLUMNS = ["offer_id", "merchant", "title", "brand", "category", "price"]

COLORS = {  # canonical -> spellings merchants use
    "black": ["black", "schwarz", "Black", "midnight black", "noir"],
    "white": ["white", "weiss", "weiß", "White", "blanc"],
    "blue": ["blue", "blau", "Blue", "navy"],
    "green": ["green", "grün", "Green", "mint"],
    "silver": ["silver", "silber", "Silver"],
}
BRAND_SPELLINGS = {
    "Samsung": ["Samsung", "SAMSUNG", "Samsung Electronics"],
    "Apple": ["Apple", "APPLE", "Apple Inc."],
    "Xiaomi": ["Xiaomi", "XIAOMI", "Xiaomi Redmi"],
    "Google": ["Google", "GOOGLE"],
    "Sony": ["Sony", "SONY", "Sony Europe"],
    "Bose": ["Bose", "BOSE"],
    "JBL": ["JBL", "Jbl", "JBL by Harman"],
    "Dell": ["Dell", "DELL", "Dell Technologies"],
    "LG": ["LG", "LG Electronics"],
    "DeLonghi": ["DeLonghi", "De'Longhi", "DELONGHI"],
    "Philips": ["Philips", "PHILIPS"],
    "Siemens": ["Siemens", "SIEMENS"],
    "Crucial": ["Crucial", "CRUCIAL", "Micron Crucial"],
    "WD": ["WD", "Western Digital", "WD Western Digital"],
}
# category -> [(brand, family, model code, base price, variant axes)]
CATALOG = {
    "Smartphones": [
        ("Samsung", "Galaxy A54 5G", "SM-A546B", 349, {"storage": [128, 256], "color": ["black", "white", "green"]}),
        ("Samsung", "Galaxy A34 5G", "SM-A346B", 279, {"storage": [128, 256], "color": ["black", "silver", "green"]}),
        ("Samsung", "Galaxy S23", "SM-S911B", 699, {"storage": [128, 256, 512], "color": ["black", "green"]}),
        ("Apple", "iPhone 15", "MTP03", 899, {"storage": [128, 256, 512], "color": ["black", "blue", "green"]}),
        ("Apple", "iPhone 14", "MPUF3", 749, {"storage": [128, 256], "color": ["black", "blue", "white"]}),
        ("Xiaomi", "Redmi Note 13", "23129RAA4G", 199, {"storage": [128, 256], "color": ["black", "blue", "green"]}),
        ("Google", "Pixel 8", "GKWS6", 649, {"storage": [128, 256], "color": ["black", "green"]}),
        ("Google", "Pixel 8a", "G8HHN", 499, {"storage": [128, 256], "color": ["black", "blue"]}),
    ],
    "Headphones": [
        ("Sony", "WH-1000XM5", "WH1000XM5", 329, {"color": ["black", "silver", "blue"]}),
        ("Sony", "WH-1000XM4", "WH1000XM4", 249, {"color": ["black", "silver", "blue"]}),
        ("Sony", "WF-1000XM5", "WF1000XM5", 279, {"color": ["black", "silver"]}),
        ("Bose", "QuietComfort Ultra", "880066-0100", 379, {"color": ["black", "white"]}),
        ("Bose", "QuietComfort 45", "866724-0100", 249, {"color": ["black", "white", "blue"]}),
        ("JBL", "Tune 770NC", "JBLT770NCBLK", 99, {"color": ["black", "white", "blue"]}),
        ("JBL", "Live 660NC", "JBLLIVE660NCBLK", 129, {"color": ["black", "white", "blue"]}),
    ],
    "Monitors": [
        ("Dell", "UltraSharp U2723QE", "U2723QE", 579, {}),
        ("Dell", "UltraSharp U2424H", "U2424H", 259, {}),
        ("Dell", "S2721DS", "S2721DS", 229, {}),
        ("LG", "UltraFine 27UP850N", "27UP850N-W", 449, {}),
        ("LG", "UltraGear 27GP850P", "27GP850P-B", 379, {}),
        ("Samsung", "Odyssey G5", "LS27CG510EUXEN", 269, {}),
        ("Samsung", "ViewFinity S6", "LS27C600UAUXEN", 319, {}),
    ],
    "Coffee machines": [
        ("DeLonghi", "Magnifica S", "ECAM 22.110.B", 329, {"color": ["black", "silver"]}),
        ("DeLonghi", "Dinamica", "ECAM 350.15.B", 499, {"color": ["black", "silver"]}),
        ("Philips", "Series 2200", "EP2220/10", 299, {"color": ["black", "white"]}),
        ("Philips", "Series 3200", "EP3246/70", 449, {"color": ["black", "silver"]}),
        ("Siemens", "EQ.300", "TI351509DE", 379, {"color": ["black", "silver"]}),
        ("Siemens", "EQ.6 plus s300", "TE651209RW", 699, {"color": ["black", "silver"]}),
    ],
    "SSDs": [
        ("Samsung", "990 EVO", "MZ-V9E{cap}", 79, {"capacity": ["1T0", "2T0"]}),
        ("Samsung", "870 EVO", "MZ-77E{cap}", 59, {"capacity": ["500B", "1T0", "2T0"]}),
        ("Crucial", "P3 Plus", "CT{cap}P3PSSD8", 55, {"capacity": ["500", "1000", "2000"]}),
        ("Crucial", "T500", "CT{cap}T500SSD8", 89, {"capacity": ["1000", "2000"]}),
        ("WD", "Black SN850X", "WDS{cap}X0E", 99, {"capacity": ["100T2", "200T2"]}),
        ("WD", "Blue SN580", "WDS{cap}B0E", 59, {"capacity": ["500G3", "100T3", "200T3"]}),
    ],
}
CATEGORY_WORDS = {
    "Smartphones": ["Smartphone", "Smartph.", "Handy", "Dual-SIM Handy"],
    "Headphones": ["Kopfhörer", "Over-Ear Kopfhörer", "Headphones", "KH", "In-Ear"],
    "Monitors": ["Monitor", "27 Zoll Monitor", "Display", "LED-Monitor", "Mon."],
    "Coffee machines": ["Kaffeevollautomat", "Kaffeevollaut.", "Espresso Machine", "KVA"],
    "SSDs": ["SSD", "NVMe SSD", "M.2 SSD", "interne SSD"],
}
MARKETING = ["NEU", "Top Angebot", "2024", "kostenloser Versand", "Bestseller", "inkl. MwSt", "OVP",
             "Blitzversand", "Sale", "%%", "Restposten", "B-Ware", "EU-Ware", "Händler"]  # fmt: skip
MERCHANTS = [f"shop-{name}" for name in (
    "alpha", "bergmann", "cityelektro", "digitalwelt", "elektro-kurz", "funkhaus", "gadgetpoint", "hifi-haus",
    "itsupply", "jansen", "kaufland-mp", "lichtblick", "mediaworld", "netzmarkt", "onlinestore24", "preisfuchs",
    "quickbuy", "rabattkoenig", "smartkauf", "technikdirekt")]  # fmt: skip


def capacity_label(cap: str) -> str:
    return {"500B": "500GB", "1T0": "1TB", "2T0": "2TB", "500": "500GB", "1000": "1TB", "2000": "2TB",
            "100T2": "1TB", "200T2": "2TB", "500G3": "500GB", "100T3": "1TB", "200T3": "2TB"}[cap]  # fmt: skip


def expand_products() -> list[dict]:
    """Every sellable product (one per variant) with its canonical facts."""
    products = []
    for category, families in CATALOG.items():
        for brand, family, model, base, axes in families:
            combos = [{}]
            for axis, values in axes.items():
                combos = [{**c, axis: v} for c in combos for v in values]
            for combo in combos:
                price = base
                code = model
                if "storage" in combo:
                    price += {128: 0, 256: 70, 512: 190}[combo["storage"]]
                if "capacity" in combo:
                    code = model.format(cap=combo["capacity"])
                    label = capacity_label(combo["capacity"])
                    price = base * {"500GB": 0.6, "1TB": 1.0, "2TB": 1.7}[label]
                    combo = {**combo, "capacity": label}
                products.append({"category": category, "brand": brand, "family": family, "model": code,
                                 "price": round(price, 2), **combo})  # fmt: skip
    return products


def typo(word: str, rng: random.Random) -> str:
    if len(word) < 4:
        return word
    i = rng.randrange(1, len(word) - 1)
    kind = rng.random()
    if kind < 0.4:  # swap two letters
        return word[:i] + word[i + 1] + word[i] + word[i + 2 :]
    if kind < 0.7:  # drop one
        return word[:i] + word[i + 1 :]
    return word[:i] + word[i] + word[i:]  # double one


def model_spelling(model: str, rng: random.Random) -> str:
    r = rng.random()
    if r < 0.25:
        return model.replace("-", "").replace(" ", "")
    if r < 0.40:
        return model.lower()
    if r < 0.45:
        return typo(model, rng)
    return model


def merchant_title(product: dict, rng: random.Random) -> str:
    brand_text = rng.choice(spellings(product)[:2])
    parts: list[list[str]] = []
    if rng.random() > 0.2:
        parts.append([brand_text])
    if rng.random() > 0.1:
        family = product["family"].split()
        parts.append([typo(w, rng) if rng.random() < 0.08 else w for w in family])
    if rng.random() > 0.15:
        parts.append([model_spelling(product["model"], rng)])
    variant = []
    if "storage" in product:
        variant.append(rng.choice(["{}GB", "{} GB", "{}G", "{}GB Speicher"]).format(product["storage"]))
    if "capacity" in product:
        variant.append(rng.choice([product["capacity"], product["capacity"].replace("B", " B"), product["capacity"].lower()]))
    if "color" in product and rng.random() > 0.1:
        variant.append(rng.choice(COLORS[product["color"]]))
    if variant:
        parts.append(variant)
    if rng.random() < 0.6:
        parts.append([rng.choice(CATEGORY_WORDS[product["category"]])])
    rng.shuffle(parts) if rng.random() < 0.35 else None
    words = [w for part in parts for w in part]
    for _ in range(rng.choice([0, 0, 1, 1, 2, 3])):
        words.insert(rng.randrange(len(words) + 1), rng.choice(MARKETING))
    title = " ".join(words)
    if rng.random() < 0.15:
        title = title.upper()
    return title


def offer_price(product: dict, rng: random.Random) -> str:
    price = product["price"] * rng.uniform(0.9, 1.1)
    if rng.random() < 0.04:  # bundle / refurbished outliers
        price *= rng.choice([0.6, 0.7, 1.35, 1.5])
    cents = rng.choice([0.99, 0.0, 0.49, 0.9])
    return f"{int(price) + cents:.2f}"


def spellings(product: dict) -> list[str]:
    return product.get("spellings") or BRAND_SPELLINGS[product["brand"]]


def brand_field(product: dict, rng: random.Random) -> str:
    r = rng.random()
    if r < 0.15:
        return ""
    return rng.choice(spellings(product))


SYLLABLES = ["ka", "lo", "mi", "ra", "ven", "tor", "zu", "bel", "dri", "xa", "no", "qui", "sar", "fen", "gol", "vi", "pax", "tem"]
NOVEL_AXES = {  # category -> (price range, variant axes a novel family draws from)
    "Smartphones": ((149, 1299), {"storage": [128, 256, 512], "color": list(COLORS)}),
    "Headphones": ((39, 449), {"color": list(COLORS)}),
    "Monitors": ((119, 899), {"color": ["black", "white", "silver"]}),
    "Coffee machines": ((199, 1499), {"color": ["black", "silver", "white"]}),
    "SSDs": ((39, 299), {"color": ["black", "blue", "green"]}),
}


def _word(rng: random.Random, parts: int) -> str:
    return "".join(rng.choice(SYLLABLES) for _ in range(parts)).capitalize()


def novel_products(rng: random.Random, n: int) -> list[dict]:
    """`n` products of families invented from `rng`: a new brand (with its own spellings), a family
    name and a model code that no catalogue entry and no published file contains; a family has
    1-6 variants (hard negatives among themselves), like the catalogue's."""
    products: list[dict] = []
    while len(products) < n:
        category = rng.choice(list(NOVEL_AXES))
        (low, high), axes = NOVEL_AXES[category]
        brand = _word(rng, rng.randint(2, 3))
        family = f"{_word(rng, 2)} {rng.choice(['', 'Pro ', 'Max ', 'Air ', 'X'])}{rng.randint(2, 99)}".replace("  ", " ")
        model = "".join(rng.choice("ABCDEFGHJKLMNPRSTUVWXZ") for _ in range(rng.randint(2, 3))) + "-" + "".join(
            rng.choice("0123456789") for _ in range(rng.randint(3, 5))) + rng.choice(["", "B", "Q", "X"])  # fmt: skip
        base = rng.randint(low, high)
        combos = [{}]
        for axis, values in axes.items():
            if rng.random() < 0.7:
                combos = [{**c, axis: v} for c in combos for v in rng.sample(values, rng.randint(1, min(3, len(values))))]
        for combo in combos:
            price = base + {128: 0, 256: 70, 512: 190}.get(combo.get("storage"), 0)
            products.append({"category": category, "brand": brand, "family": family, "model": model, "price": float(price),
                             "spellings": [brand, brand.upper(), f"{brand} Europe"], **combo})  # fmt: skip
    return products[:n]


def offer_set(seed: int, n_products: int, novel: int = 0) -> tuple[list[dict], list[tuple[str, str]]]:
    """(offers, [(offer_id, cluster_id)]) for a random sample of `n_products` catalogue products
    (at most the whole catalogue) plus `novel` invented ones (`novel_products`)."""
    rng = random.Random(seed)
    products = expand_products()
    chosen = rng.sample(products, min(n_products, len(products)))
    if novel:
        chosen += novel_products(rng, novel)
        rng.shuffle(chosen)
    rows = []
    for index, product in enumerate(chosen):
        n_offers = min(len(MERCHANTS), max(1, int(rng.paretovariate(1.2))) + rng.choice([0, 1, 2, 3, 5]))
        for merchant in rng.sample(MERCHANTS, n_offers):
            rows.append(({"merchant": merchant, "title": merchant_title(product, rng), "brand": brand_field(product, rng),
                          "category": product["category"], "price": offer_price(product, rng)}, f"p{seed}-{index:04d}"))  # fmt: skip
    rng.shuffle(rows)
    offers, labels = [], []
    for number, (offer, cluster) in enumerate(rows, start=1):
        offer_id = f"o{seed % 100:02d}{number:05d}"
        offers.append({"offer_id": offer_id, **offer})
        labels.append((offer_id, cluster))
    return offers, labels


def write_csv(path: Path, header: list[str], rows) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)


def main() -> None:
    data = PACK / "fixtures" / "offer-matcher-repo" / "data"
    labels_dir = PACK / "verify" / "labels"
    sets = {"offers": (11, 220), "dev": (23, 50)}
    for name, (seed, n_products) in sets.items():
        offers, labels = offer_set(seed, n_products)
        rows = [[o[c] for c in COLUMNS] for o in offers]
        if name == "offers":
            write_csv(data / "offers.csv", COLUMNS, rows)
            write_csv(labels_dir / "offers_labels.csv", ["offer_id", "cluster_id"], labels)
        else:
            write_csv(data / "dev_offers.csv", COLUMNS, rows)
            write_csv(data / "dev_labels.csv", ["offer_id", "cluster_id"], labels)


if __name__ == "__main__":
    main()
