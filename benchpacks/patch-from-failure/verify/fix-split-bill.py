"""Pass iff split_bill keeps every cent for all inputs, the shipped tests are
untouched and pass, and only source files under pricing/ (or new tests) changed."""

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
        visible_tests=verifykit.unittest_argv(Path("tests"), Path(".")),
        hidden_dir=Path(__file__).resolve().parent / "hidden" / ctx.case,
        timeout=30,
    )
)
