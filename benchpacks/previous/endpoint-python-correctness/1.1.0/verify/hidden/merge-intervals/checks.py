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


def draw(rng):
    """Property-style probes drawn per execution from the verifier's secret seed.

    Distribution: 30 lists of 0–25 intervals, starts uniform in [-1000, 1000],
    lengths uniform in [0, 200]; each call must equal `reference` (only here)
    and leave its argument unchanged (state after the call)."""
    probes = []
    for index in range(30):
        data = []
        for _ in range(rng.randint(0, 25)):
            start = rng.randint(-1000, 1000)
            data.append((start, start + rng.randint(0, 200)))
        probes.append(Probe(f"drawn-{index}", f"data = {data!r}; out = merge_intervals(list(data)); "
                            f"copy = list(data); merge_intervals(copy); result = (out, copy == data)",
                            (reference(data), True)))  # fmt: skip
    return probes
