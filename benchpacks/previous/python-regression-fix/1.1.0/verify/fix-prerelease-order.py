"""Pass iff semver precedence holds again for every version (hidden checks,
judged here), the shipped tests are untouched, and only the library, new test
files and CHANGELOG.md changed."""

import sys

sys.dont_write_bytecode = True  # never leave __pycache__ in the pack

from pathlib import Path  # noqa: E402

import verifykit  # noqa: E402

ctx = verifykit.parse_args()
sys.exit(
    verifykit.standard_python_verifier(
        ctx,
        protected=("tests/test_version.py", "tests/test_specifier.py", "tests/__init__.py"),
        allowed=("versionkit/*.py", "tests/test_*.py", "CHANGELOG.md"),
        visible_tests=verifykit.python_argv(module="unittest", args=["discover", "-s", "tests", "-t", "."]),
        hidden=Path(__file__).resolve().parent / "hidden" / ctx.case / "checks.py",
        timeout=30,
    )
)
