"""Hidden checks for merge-intervals, evaluated in the candidate's sandboxed process and
judged by the verifier (verifykit.check_hidden). Never copied into the workspace."""

import random

from verifykit import Probe, Raises

SETUP = "from pyfuncs.intervals import merge_intervals"


def reference(intervals):
    merged = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


rng = random.Random(3)
RANDOM_INPUTS = [
    [(s, s + rng.randrange(0, 5)) for s in (rng.randrange(-20, 20) for _ in range(rng.randrange(0, 8)))]
    for _ in range(300)
]

PROBES = [
    # the shipped tests' cases
    Probe("merges-overlaps", "merge_intervals([(1, 3), (2, 6), (8, 10)])", [(1, 6), (8, 10)]),
    Probe("unsorted-input", "merge_intervals([(8, 10), (1, 3)])", [(1, 3), (8, 10)]),
    Probe("empty", "merge_intervals([])", []),
    # the docstring's edges
    Probe("touching-intervals-merge", "merge_intervals([(3, 5), (1, 3)])", [(1, 5)]),
    Probe("adjacent-but-not-touching-stay-apart", "merge_intervals([(1, 2), (3, 4)])", [(1, 2), (3, 4)]),
    Probe("contained-and-point-intervals", "merge_intervals([(1, 10), (2, 3), (10, 10), (12, 12)])", [(1, 10), (12, 12)]),
    Probe("duplicates-and-negatives", "merge_intervals([(-5, -1), (-5, -1), (-1, 0)])", [(-5, 0)]),
    Probe("input-not-modified", "data = [(5, 6), (1, 2)]\nmerge_intervals(data)\nresult = data", [(5, 6), (1, 2)]),
    Probe("bad-interval-rejected", "merge_intervals([(3, 1)])", Raises("ValueError")),
    Probe("bad-interval-among-good-rejected", "merge_intervals([(0, 1), (9, 2)])", Raises("ValueError")),
    Probe("random-against-reference", f"[merge_intervals(x) for x in {RANDOM_INPUTS!r}]",
          [reference(x) for x in RANDOM_INPUTS]),  # fmt: skip
]
