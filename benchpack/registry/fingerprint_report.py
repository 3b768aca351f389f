"""`registry fingerprint`: what each result directory's fingerprints are made of.

For every (run, pack, case, model) it lists the fingerprint inputs, which of
them are unknown, and, for the same pack case seen in several runs, whether
each pair is comparable and which inputs differ.
"""

from __future__ import annotations

from itertools import combinations
from pathlib import Path

from benchpack.registry import fingerprint as fp
from benchpack.results.resultdir import field, load_result_dir


def fingerprint_report(result_dirs: list[Path]) -> dict:
    entries = []
    for path in result_dirs:
        result = load_result_dir(path)
        seen = {}
        for row in result.rows:
            key = (field(row, "pack.id"), field(row, "pack.version"), field(row, "case"), field(row, "model"))
            if key not in seen:
                seen[key] = fp.compute(fp.fingerprint_inputs(*key, result.run_metadata, result.hardware))
        for (pack_id, pack_version, case, model), print_ in seen.items():
            entries.append({"run": str(path), "pack": pack_id, "pack_version": pack_version, "case": case,
                            "model": model, **print_.to_dict()})
    comparisons = []
    for a, b in combinations(entries, 2):
        if (a["pack"], a["case"]) != (b["pack"], b["case"]) or a["run"] == b["run"]:
            continue
        verdict = fp.compare(fp.Fingerprint.from_dict(a), fp.Fingerprint.from_dict(b))
        comparisons.append({"pack": a["pack"], "case": a["case"], "runs": [a["run"], b["run"]], **verdict.to_dict()})
    return {"fingerprints": entries, "comparisons": comparisons}
