"""Hidden checks for fix-prerelease-order, evaluated in the candidate's sandboxed process
and judged by the verifier (verifykit.check_hidden). Never copied into the workspace.

The semver 2.0.0 precedence chain (section 11) plus the shipped tests' cases,
and the realistic wrong fixes seen in practice: zero-padding numeric
identifiers (wrong past 20 digits and for identifiers starting with "-"),
lower-casing tags (ASCII order is case-sensitive), and a `latest` that
returns None when every version is a prerelease.
"""

import random

from verifykit import Probe, Raises

SETUP = "from versionkit import InvalidVersion, Specifier, Version, latest\nV = Version.parse"
INVALID = Raises("versionkit.version.InvalidVersion")

# semver.org section 11, in ascending order, plus numeric and ASCII edge cases
CHAIN = [
    "1.0.0-0", "1.0.0-1", "1.0.0-2", "1.0.0-10", "1.0.0-99999999999999999999999", "1.0.0-100000000000000000000000",
    "1.0.0--", "1.0.0--1", "1.0.0-A", "1.0.0-Alpha", "1.0.0-RC.1", "1.0.0-alpha", "1.0.0-alpha.1",
    "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2", "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0-rc.9", "1.0.0-rc.10",
    "1.0.0-rc.10.1", "1.0.0-rc.100", "1.0.0-rc.12345678901234567890", "1.0.0-rc1", "1.0.0", "1.0.1-0", "1.0.1",
    "1.10.0",
]


def pair(low, high):
    return Probe(f"order {low} < {high}",
                 f"(V({low!r}) < V({high!r}), V({high!r}) > V({low!r}), V({low!r}) != V({high!r}), V({high!r}) <= V({low!r}))",
                 (True, True, True, False))  # fmt: skip


shuffled = CHAIN[:]
random.Random(7).shuffle(shuffled)

PROBES = [
    # the shipped tests' cases (they only count as a signal now)
    Probe("parses-core-prerelease-build",
          "v = V('1.4.2-rc.1+build.7'); result = (v.major, v.minor, v.patch, v.prerelease, v.build, str(v))",
          (1, 4, 2, ("rc", "1"), ("build", "7"), "1.4.2-rc.1+build.7")),  # fmt: skip
    Probe("accepts-leading-v", "V('v2.0.0') == Version(2, 0, 0)", True),
    *[Probe(f"rejects {text!r}", f"V({text!r})", INVALID) for text in ("1.2", "1.02.3", "1.2.3-01", "one.two.three", "")],
    Probe("core-numeric", "V('1.9.0') < V('1.10.0')", True),
    Probe("build-ignored", "(V('1.0.0+a') == V('1.0.0+b'), len({V('1.0.0+a'), V('1.0.0+b')}))", (True, 1)),
    Probe("latest-skips-prereleases", "str(latest(['1.2.0', '1.10.0', '1.11.0-rc.1']))", "1.10.0"),
    Probe("latest-of-nothing", "latest([])", None),
    Probe("bumps", "v = V('1.4.2-rc.1'); result = [str(v.bump(p)) for p in ('patch', 'minor', 'major')]",
          ["1.4.2", "1.5.0", "2.0.0"]),  # fmt: skip
    Probe("specifier-range", "s = Specifier.parse('>=1.2, <2'); result = [s.contains(x) for x in ('1.2.0', '1.99.0', '2.0.0', '1.1.9')]",
          [True, True, False, False]),  # fmt: skip
    Probe("specifier-prereleases",
          "[Specifier.parse('>=1.0').contains('1.5.0-rc.1'), Specifier.parse('>=1.0').contains('1.5.0-rc.1', include_prereleases=True), "
          "Specifier.parse('>=1.5.0-rc.1').contains('1.5.0-rc.2')]", [False, True, True]),  # fmt: skip
    Probe("specifier-filter-str", "s = Specifier.parse('!=1.3.0,>=1.2'); result = ([str(v) for v in s.filter(['1.2.0', '1.3.0', '1.4.0'])], str(s))",
          (["1.2.0", "1.4.0"], "!=1.3.0,>=1.2.0")),  # fmt: skip
    Probe("specifier-rejects-bad-clause", "Specifier.parse('~1.2')", INVALID),
    # the precedence chain, pairwise and as a sort
    *[pair(low, high) for low, high in zip(CHAIN, CHAIN[1:])],
    Probe("sorting-restores-the-chain", f"[str(v) for v in sorted(V(x) for x in {shuffled!r})]", CHAIN),
    # the reported symptoms
    Probe("latest-rc-10", "str(latest(['1.0.0-rc.2', '1.0.0-rc.10'], include_prereleases=True))", "1.0.0-rc.10"),
    Probe("latest-beta-12", "str(latest(['2.1.0-beta.3', '2.1.0-beta.12', '2.1.0-beta.9'], include_prereleases=True))", "2.1.0-beta.12"),
    Probe("specifier-rc-10", "Specifier.parse('>=1.0.0-rc.3').contains('1.0.0-rc.10')", True),
    Probe("specifier-alpha-20", "Specifier.parse('<3.0.0-alpha.7').contains('3.0.0-alpha.20', include_prereleases=True)", False),
    # latest when every candidate is a prerelease (documented: then prereleases count)
    Probe("latest-all-prereleases", "str(latest(['1.0.0-rc.1', '1.0.0-rc.10', '1.0.0-rc.2']))", "1.0.0-rc.10"),
    # equality and hashing ignore build metadata, and case matters
    Probe("equal-hash-build", "(V('1.0.0-rc.10+x') == V('1.0.0-rc.10+y'), hash(V('1.0.0-rc.10+x')) == hash(V('1.0.0-rc.10+y')), V('1.0.0-rc.10') <= V('1.0.0-rc.10'))",
          (True, True, True)),  # fmt: skip
    Probe("case-is-significant", "(V('1.0.0-Alpha') == V('1.0.0-alpha'), len({V('1.0.0-RC.1'), V('1.0.0-rc.1')}))", (False, 2)),
    Probe("str-round-trip", "[str(V(x)) for x in ('1.0.0-RC.1', '1.0.0--1', '1.0.0-rc.10+Build.5')]",
          ["1.0.0-RC.1", "1.0.0--1", "1.0.0-rc.10+Build.5"]),  # fmt: skip
]


def _precedence(text):
    """semver 2.0.0 section 11, here only: the oracle for drawn versions."""
    core, _, pre = text.partition("+")[0].partition("-")
    numbers = tuple(int(x) for x in core.split("."))
    if not pre:
        return (numbers, 1, ())
    keys = tuple((0, int(x), "") if x.isdigit() else (1, 0, x) for x in pre.split("."))
    return (numbers, 0, keys)


def _identifier(rng):
    if rng.random() < 0.4:
        return str(rng.choice([0, 1, 2, 9, 10, 11, 99, 100, rng.randint(0, 10**rng.randint(1, 25))]))
    alphabet = "abcrRCAZz-0123456789"
    text = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 6)))
    return text if not text.isdigit() else text + "x"


def draw(rng):
    """Property-style probes drawn per execution from the verifier's secret seed.

    Distribution: 6 sets of versions; the set size is drawn too (12, or one
    set in four up to 80). Each set draws its own number range `top` —
    [0, 3] half of the time (never for the first set), else [0, 10**k] with k uniform in 1..30 (a long
    tail: numbers far past any fixed cap, compared as integers) — and a pool
    of 1–4 majors from it, so versions share majors and minor/patch decide;
    minor and patch are uniform in [0, top]; 60% with a prerelease of 1–3 identifiers (40% numeric:
    small, boundary or up to 25 digits; else 1–6 chars of [abcrRCAZz0-9-]),
    20% with build metadata. Sorting must follow `_precedence` (only here);
    build metadata is ignored for order and equality."""
    probes = []
    for index in range(6):
        versions = []
        top = 3 if index and rng.random() < 0.5 else 10 ** rng.randint(1, 30)  # the first set always reaches past 3
        size = 12 if rng.random() < 0.75 else rng.randint(12, 80)
        majors = [rng.randint(0, top) for _ in range(rng.randint(1, 4))]
        while len(versions) < size:
            text = f"{rng.choice(majors)}.{rng.randint(0, top)}.{rng.randint(0, top)}"
            if rng.random() < 0.6:
                text += "-" + ".".join(_identifier(rng) for _ in range(rng.randint(1, 3)))
            if rng.random() < 0.2:
                text += "+b" + str(rng.randint(0, 99))
            if all(_precedence(text) != _precedence(v) for v in versions):
                versions.append(text)
        expected = [v.partition("+")[0] for v in sorted(versions, key=_precedence)]
        probes.append(Probe(f"drawn-sort-{index}", f"[str(v).partition('+')[0] for v in sorted(V(x) for x in {versions!r})]", expected))
        low, high = sorted(rng.sample(versions, 2), key=_precedence)
        probes.append(pair(low, high))
    return probes
