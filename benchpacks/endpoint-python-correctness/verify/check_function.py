"""Pass iff the case's module (one file, written with a D-031 replacement
block) answers every hidden check (judged here; the shipped test module only
counts as a signal), the tests are untouched, and nothing but that one module
changed."""

import sys

sys.dont_write_bytecode = True  # never leave __pycache__ in the pack

from pathlib import Path  # noqa: E402

import verifykit  # noqa: E402

CASES = {  # case -> (the one file it may change, its shipped test module)
    "merge-intervals": ("pyfuncs/intervals.py", "tests/test_intervals.py"),
    "roman-numerals": ("pyfuncs/roman.py", "tests/test_roman.py"),
}

ctx = verifykit.parse_args()
if ctx.case not in CASES:
    ctx.add(verifykit.Check("evidence", False, f"unknown case {ctx.case!r}", True))
    sys.exit(verifykit.finish(ctx))
module_file, test_module = CASES[ctx.case]
sys.exit(
    verifykit.standard_python_verifier(
        ctx,
        protected=("tests/**",),
        allowed=(module_file,),
        tests=(test_module,),
        hidden=Path(__file__).resolve().parent / "hidden" / ctx.case / "checks.py",
        timeout=30,
    )
)
