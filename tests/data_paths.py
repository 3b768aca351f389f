"""Where the test suite's checked-in data lives (see tests/data/README.md).

Everything the tests read is inside the repository: a user's clone has nothing
beside it."""
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"
REAL_RESULTS = DATA / "real-results"
