"""Hidden checks for fix-split-bill, evaluated in the candidate's sandboxed process
and judged by the verifier (verifykit.check_hidden). Never copied into the workspace.

They cover the shipped tests' cases (which only count as a signal now), totals
the prompt never showed, bad input, and `format_cents`, which a fix must leave
alone (a thousands separator "while at it" is a realistic wrong fix).
"""

from verifykit import Probe, Raises

SETUP = "from pricing import format_cents, split_bill"


def reference_split(total, people):
    share, extra = divmod(total, people)
    return [share + 1] * extra + [share] * (people - extra)


PROBES = [
    Probe("even-split", "split_bill(900, 3)", [300, 300, 300]),
    Probe("uneven-split-keeps-every-cent", "split_bill(1000, 3)", [334, 333, 333]),
    Probe("one-person", "split_bill(1999, 1)", [1999]),
    Probe("known-1001-4", "split_bill(1001, 4)", [251, 250, 250, 250]),
    Probe("known-2-3", "split_bill(2, 3)", [1, 1, 0]),
    Probe("more-people-than-cents", "split_bill(3, 7)", [1, 1, 1, 0, 0, 0, 0]),
    Probe("huge-total", "split_bill(10**15 + 7, 6)", reference_split(10**15 + 7, 6)),
    Probe("rejects-nobody", "split_bill(100, 0)", Raises("ValueError")),
    Probe("rejects-negative-people", "split_bill(100, -2)", Raises("ValueError")),
    Probe("rejects-negative-total", "split_bill(-1, 2)", Raises("ValueError")),
    Probe("input-not-mutated-and-fresh-lists", "a = split_bill(5, 2); a.append(9); result = split_bill(5, 2)", [3, 2]),
    Probe("format-cents", "format_cents(1234)", "12.34"),
    Probe("format-negative-cents", "format_cents(-5)", "-0.05"),
    Probe("format-zero", "format_cents(0)", "0.00"),
    Probe("format-no-thousands-separator", "format_cents(123456789)", "1234567.89"),
    Probe("format-negative-thousands", "format_cents(-100000)", "-1000.00"),
]
for total in (0, 1, 2, 99, 100, 101, 1001, 12345):
    PROBES.append(Probe(f"sweep-total-{total}", f"[split_bill({total}, p) for p in range(1, 9)]",
                        [reference_split(total, p) for p in range(1, 9)]))


def draw(rng):
    """Property-style probes drawn per execution from the verifier's secret seed.

    Distribution (published; the draw never is): 40 calls with total uniform in
    [0, 10**rng.randint(1, 12)] cents and people uniform in [1, 40]; 4 calls with
    people uniform in [-40, 0] (must raise ValueError). Judged against
    `reference_split`, which lives only here. Each call is also checked for its
    state: the list it returns sums to the total and is a fresh list."""
    probes = []
    for index in range(40):
        total, people = rng.randint(0, 10 ** rng.randint(1, 12)), rng.randint(1, 40)
        probes.append(Probe(f"drawn-{index}", f"a = split_bill({total}, {people}); b = split_bill({total}, {people}); "
                            f"result = (a, sum(a), a is not b)", (reference_split(total, people), total, True)))  # fmt: skip
    for index in range(4):
        probes.append(Probe(f"drawn-bad-{index}", f"split_bill({rng.randint(0, 10**6)}, {rng.randint(-40, 0)})", Raises("ValueError")))
    return probes
