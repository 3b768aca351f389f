"""A user's clone has nothing beside it: no code or test may read the design
material (`../shared`) that only the project's own machines have."""
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUTSIDE_READ = re.compile(r'\.\./shared|parents\[\d\]\s*/\s*"shared"|/\s*"shared"\s*/')


def tracked_code_files():
    listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True)
    for name in listed.stdout.splitlines():
        path = ROOT / name
        if path.suffix != ".md" and path.is_file():
            yield path


def test_no_tracked_file_reads_outside_the_repository():
    offenders = []
    for path in tracked_code_files():
        try:
            text = path.read_text()
        except UnicodeDecodeError:
            continue
        if path == Path(__file__).resolve():
            continue
        offenders += [f"{path.relative_to(ROOT)}:{n}" for n, line in enumerate(text.splitlines(), 1)
                      if OUTSIDE_READ.search(line)]
    assert offenders == []


def test_the_real_result_fixtures_are_in_the_repository():
    from tests.data_paths import REAL_RESULTS
    assert len([p for p in REAL_RESULTS.iterdir() if (p / "run.jsonl").is_file()]) == 5
