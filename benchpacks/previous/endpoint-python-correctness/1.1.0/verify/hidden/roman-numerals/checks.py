"""Hidden checks for roman-numerals, evaluated in the candidate's sandboxed process and
judged by the verifier (verifykit.check_hidden). Never copied into the workspace.

Besides every number round-tripping, the realistic wrong fixes seen in
practice: from_roman accepting surrounding whitespace, and to_roman accepting
non-int input (3.0, "12") by converting it."""

from verifykit import Probe, Raises

SETUP = "from pyfuncs.roman import from_roman, to_roman"
SYMBOLS = [(1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"),
           (50, "L"), (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I")]  # fmt: skip


def reference(number):
    out = []
    for value, symbol in SYMBOLS:
        count, number = divmod(number, value)
        out.append(symbol * count)
    return "".join(out)


NOT_A_NUMERAL = ("IIII", "IC", "", "mcm", "VV", "XM", "MMMM", "IIV", "ABC", " XIV", "XIV ", "XIV\n", "X IV", "\tI", "Ⅻ")
NOT_AN_INT = ("3.0", "3.9", "'12'", "None", "[4]", "True", "False")

PROBES = [
    # the shipped tests' cases
    Probe("to-roman-1994-and-4", "(to_roman(1994), to_roman(4))", ("MCMXCIV", "IV")),
    Probe("from-roman-1994-and-58", "(from_roman('MCMXCIV'), from_roman('LVIII'))", (1994, 58)),
    Probe("rejects-zero", "to_roman(0)", Raises("ValueError")),
    # every number, both ways
    Probe("to-roman-every-number", "[to_roman(n) for n in range(1, 4000)]", [reference(n) for n in range(1, 4000)]),
    Probe("round-trip-every-number", "[from_roman(to_roman(n)) for n in range(1, 4000)]", list(range(1, 4000))),
    Probe("from-roman-of-the-reference", f"[from_roman(t) for t in {[reference(n) for n in range(1, 4000, 7)]!r}]",
          list(range(1, 4000, 7))),  # fmt: skip
    *[Probe(f"to-roman-rejects {bad}", f"to_roman({bad})", Raises("ValueError")) for bad in ("-1", "4000", "10**6")],
    # not numbers: ValueError by the docstring; TypeError is an honest refusal too, a result is not
    *[Probe(f"to-roman-refuses {bad}", f"to_roman({bad})", Raises("ValueError", "TypeError")) for bad in NOT_AN_INT],
    *[Probe(f"from-roman-rejects {bad!r}", f"from_roman({bad!r})", Raises("ValueError")) for bad in NOT_A_NUMERAL],
    Probe("from-roman-refuses-non-strings", "from_roman(14)", Raises("ValueError", "TypeError")),
]


def draw(rng):
    """Property-style probes drawn per execution from the verifier's secret seed.

    Distribution: 40 numbers uniform in [1, 3999] (to_roman must equal
    `reference`, which lives only here, and from_roman must invert it); 10
    strings of 1–6 letters from IVXLCDM that are not a canonical numeral
    (from_roman must raise ValueError)."""
    numbers = [rng.randint(1, 3999) for _ in range(40)]
    canonical = {reference(n) for n in range(1, 4000)}
    bad = []
    while len(bad) < 10:
        text = "".join(rng.choice("IVXLCDM") for _ in range(rng.randint(1, 6)))
        if text not in canonical:
            bad.append(text)
    probes = [Probe(f"drawn-{i}", f"(to_roman({n}), from_roman({reference(n)!r}))", (reference(n), n)) for i, n in enumerate(numbers)]
    probes += [Probe(f"drawn-bad-{i}", f"from_roman({t!r})", Raises("ValueError")) for i, t in enumerate(bad)]
    return probes
