"""Where the test suite's checked-in data lives (see tests/data/README.md).

Everything the tests read is inside the repository: a user's clone has nothing
beside it."""
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"
REAL_RESULTS = DATA / "real-results"
# Result directories of the depth and concurrency lanes against a real llama-server (docs/lanes.md).
LANES_RESULTS = DATA / "lanes-results"
