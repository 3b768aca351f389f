"""Pass iff split_bill keeps every cent for all inputs (hidden checks, judged here),
format_cents still formats as before, the shipped tests are untouched, and only
source files under pricing/ (or new tests) changed."""

import sys

sys.dont_write_bytecode = True  # never leave __pycache__ in the pack

from pathlib import Path  # noqa: E402

import verifykit  # noqa: E402

ctx = verifykit.parse_args()
sys.exit(
    verifykit.standard_python_verifier(
        ctx,
        protected=("tests/test_bill.py", "tests/__init__.py"),
        allowed=("pricing/*.py", "tests/test_*.py"),
        tests=("tests/test_bill.py",),
        hidden=Path(__file__).resolve().parent / "hidden" / ctx.case / "checks.py",
        timeout=30,
    )
)
