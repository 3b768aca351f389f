"""The bundled coding packs: they load, ship complete audit fixtures, keep their
verifier helpers in sync, hide their labels, and pass `benchpack audit`."""

from __future__ import annotations

import csv
import importlib.util
import json
import sys
from collections import Counter
from pathlib import Path

import pytest

from benchpack.selfcheck.audit import load_audit, missing_coverage
from benchpack.cli import main
from benchpack.packs.loader import bundled_packs_dir, load_pack

CODING_PACKS = {
    "patch-from-failure": "1.2.0",
    "python-regression-fix": "1.2.0",
    "django-dashboard-regression-fix": "1.2.0",
    "mini-project-completion": "1.2.0",
    "endpoint-python-correctness": "1.2.0",
    "product-offer-matching": "1.2.0",
}
OFFERS = bundled_packs_dir() / "product-offer-matching"
LABELS = OFFERS / "verify" / "labels"


def load_module(path: Path, name: str):
    """A bundled pack's script, loaded in this process without writing bytecode beside it (the pack's own
    runs use `python -B`; a `__pycache__` left in benchpacks/ fails the litter test below)."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    writes, sys.dont_write_bytecode = sys.dont_write_bytecode, True
    try:
        spec.loader.exec_module(module)
    finally:
        sys.dont_write_bytecode = writes
    return module


def read_csv(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


@pytest.mark.parametrize("pack_id, version", sorted(CODING_PACKS.items()))
def test_it_ships_each_coding_pack_with_docs_and_complete_audit_fixtures(pack_id, version):
    pack = load_pack(bundled_packs_dir() / pack_id)
    assert (pack.id, pack.version) == (pack_id, version)
    readme = (pack.root / "README.md").read_text()
    assert "## What it measures" in readme and "## What it does not measure" in readme
    assert "## Reference result" in readme
    assert all(case.kind == "repo-task" and case.scoring.mode == "verify-script" for case in pack.cases)
    fixtures = load_audit(pack)
    assert {f.case_id for f in fixtures} == {c.id for c in pack.cases}
    assert missing_coverage(fixtures) == {}
    assert {f.expected for f in fixtures if f.kind in ("known-good", "alternative-valid")} == {"pass"}
    assert {f.expected for f in fixtures if f.kind not in ("known-good", "alternative-valid")} == {"fail"}


@pytest.mark.parametrize("pack_id", sorted(CODING_PACKS))
def test_it_keeps_fixtures_free_of_build_litter_and_verifier_helpers_in_sync(pack_id):
    root = bundled_packs_dir() / pack_id
    litter = [p for p in root.rglob("*") if p.name in ("__pycache__", "db.sqlite3", "target") or p.suffix == ".pyc"]
    assert litter == []
    # One kit in the core, pinned by the pack (verify/verifykit.toml), no private copy.
    assert not (root / "verify" / "verifykit.py").exists()
    assert (root / "verify" / "verifykit.toml").read_text().strip().endswith("version = 3")


def test_it_marks_the_opt_in_packs_as_opt_in():
    for pack_id in ("mini-project-completion", "product-offer-matching"):
        assert "opt-in" in (bundled_packs_dir() / pack_id / "README.md").read_text().lower()
    pack = load_pack(OFFERS)
    assert {c.harness.id for c in pack.cases} == {"external-agent"}


# -- product-offer-matching data ---------------------------------------------------


EXAMPLE_HOLDOUT_SEED = 37  # the README's reference numbers; real holdouts are drawn from a secret seed


def example_holdout():
    generator = load_module(OFFERS / "scripts" / "generate_offers.py", "generate_offers_for_holdout")
    offers, labels = generator.offer_set(EXAMPLE_HOLDOUT_SEED, 220)
    return ([{k: str(v) for k, v in o.items()} for o in offers],
            [{"offer_id": o, "cluster_id": c} for o, c in labels])  # fmt: skip


def offer_sets():
    data = OFFERS / "fixtures" / "offer-matcher-repo" / "data"
    return [
        (read_csv(data / "offers.csv"), read_csv(LABELS / "offers_labels.csv")),
        example_holdout(),
        (read_csv(data / "dev_offers.csv"), read_csv(data / "dev_labels.csv")),
    ]


def test_it_keeps_hidden_labels_and_holdout_out_of_the_workspace_fixture():
    repo = OFFERS / "fixtures" / "offer-matcher-repo"
    names = {p.name for p in repo.rglob("*")}
    assert not names & {"offers_labels.csv", "holdout_offers.csv", "holdout_labels.csv"}
    # no holdout is shipped at all: the verifier draws it per execution from a secret seed
    assert sorted(p.name for p in LABELS.iterdir()) == ["offers_labels.csv"]
    for offers, _ in offer_sets():
        assert list(offers[0]) == ["offer_id", "merchant", "title", "brand", "category", "price"]


def test_it_has_no_column_that_identifies_the_cluster():
    metrics = load_module(OFFERS / "verify" / "clustermetrics.py", "clustermetrics_for_test")
    for offers, labels in offer_sets():
        gold = {row["offer_id"]: row["cluster_id"] for row in labels}
        assert set(gold) == {o["offer_id"] for o in offers}
        for column in offers[0]:
            by_column = {o["offer_id"]: o[column] for o in offers}
            result = metrics.scores(by_column, gold)
            # a 1:1 proxy (GTIN, image_url) scores ~1.0 on both; the best column here is far below
            assert result["bcubed"]["f1"] < 0.6, column
            assert result["pairwise"]["f1"] < 0.2, column
        # row order / offer ids carry no cluster signal: neighbours share a cluster about as rarely as random pairs
        clusters = [gold[o["offer_id"]] for o in sorted(offers, key=lambda o: o["offer_id"])]
        adjacent = sum(a == b for a, b in zip(clusters, clusters[1:])) / (len(clusters) - 1)
        sizes = Counter(clusters)
        random_pair = sum(n * (n - 1) for n in sizes.values()) / (len(clusters) * (len(clusters) - 1))
        assert adjacent < 3 * random_pair + 0.01


def test_it_regenerates_the_offer_sets_byte_for_byte():
    generator = load_module(OFFERS / "scripts" / "generate_offers.py", "generate_offers_for_test")
    offers, labels = generator.offer_set(11, 220)
    shipped = read_csv(OFFERS / "fixtures" / "offer-matcher-repo" / "data" / "offers.csv")
    assert [{k: str(v) for k, v in o.items()} for o in offers] == shipped
    assert labels == [(r["offer_id"], r["cluster_id"]) for r in read_csv(LABELS / "offers_labels.csv")]


def test_the_documented_baseline_fails_the_quality_thresholds():
    sys.dont_write_bytecode = True
    baseline = load_module(OFFERS / "scripts" / "baseline_clusterer.py", "baseline_for_test")
    metrics = sys.modules["clustermetrics"]
    offers, labels = example_holdout()
    gold = {r["offer_id"]: r["cluster_id"] for r in labels}
    result = metrics.scores(baseline.cluster(offers), gold)
    bcubed, pairwise = result["bcubed"]["f1"], result["pairwise"]["f1"]
    assert bcubed < 0.70  # D-036: the simple title baseline must not pass
    readme = (OFFERS / "README.md").read_text()
    assert f"| {bcubed:.3f} | {pairwise:.3f} | fail" in readme


def test_the_cluster_metrics_match_hand_computed_values():
    metrics = load_module(OFFERS / "verify" / "clustermetrics.py", "clustermetrics_for_hand")
    gold = {"a": "1", "b": "1", "c": "2"}
    perfect = metrics.scores({"a": "x", "b": "x", "c": "y"}, gold)
    assert perfect["bcubed"]["f1"] == 1.0 and perfect["pairwise"]["f1"] == 1.0
    lumped = metrics.scores({"a": "x", "b": "x", "c": "x"}, gold)
    # B-cubed precision: a,b see 2/3 correct, c sees 1/3 -> 5/9; recall 1
    assert lumped["bcubed"]["precision"] == pytest.approx(5 / 9) and lumped["bcubed"]["recall"] == 1.0
    # pairwise: 3 predicted pairs, 1 true -> precision 1/3, recall 1
    assert lumped["pairwise"]["precision"] == pytest.approx(1 / 3)
    # an offer the matcher forgot counts as its own cluster
    assert metrics.bcubed({"a": "x"}, gold)["recall"] < 1.0


# -- every bundled coding pack passes its own audit (runs in CI) -------------------------


@pytest.mark.bubblewrap
@pytest.mark.slow
@pytest.mark.parametrize("pack_id", sorted(CODING_PACKS))
def test_it_passes_the_bundled_verifier_audit(pack_id, capsys):
    from tests import untouched

    before = untouched.snapshot()
    assert main(["audit", pack_id, "--json"]) == 0
    # nothing of the project's environment or packs was written, not even for a moment (issue 31)
    assert untouched.differences(before, untouched.snapshot()) == []
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] and all(f["ok"] for f in report["fixtures"])
    known_good = [f for f in report["fixtures"] if f["kind"] == "known-good"]
    assert known_good and all(f["actual"] == "pass" for f in known_good)
