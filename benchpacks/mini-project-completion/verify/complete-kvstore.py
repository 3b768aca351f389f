"""Pass iff kvstore.store implements the documented nested-transaction
semantics (hidden checks, judged here), the shipped tests are untouched, and only
kvstore/ (or new test files) changed."""

import sys

sys.dont_write_bytecode = True  # never leave __pycache__ in the pack

from pathlib import Path  # noqa: E402

import verifykit  # noqa: E402

ctx = verifykit.parse_args()
sys.exit(
    verifykit.standard_python_verifier(
        ctx,
        protected=("tests/test_store.py", "tests/__init__.py"),
        allowed=("kvstore/*.py", "tests/test_*.py"),
        tests=("tests/test_store.py",),
        hidden=Path(__file__).resolve().parent / "hidden" / ctx.case / "checks.py",
        timeout=30,
    )
)
