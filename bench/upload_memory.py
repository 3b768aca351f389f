"""Web-worker memory under parallel large uploads by one user (issue 22 §3).

    uv run python bench/upload_memory.py [--uploads 32] [--mb 20.8]

Starts the registry as the live tests do (granian, SQLite, no validation
worker), makes one verified user with an API token, and sends `--uploads`
distinct archives of `--mb` MB at once from a bounded loopback client (each
archive streamed from a file on disk, so the client holds none in memory).
Samples the granian worker processes' RSS every 50 ms and reports it before,
at the peak and 5 s after, with the answers' status codes.

The repository measured is the current directory's (it puts the working
directory first on sys.path), so the same script measures another checkout:
`cd ../other && python /path/to/bench/upload_memory.py`.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, os.getcwd())

import httpx  # noqa: E402

from tests.service.live import start_live_service  # noqa: E402


def _children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            pass
    return found


def _rss_mb(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--uploads", type=int, default=32)
    parser.add_argument("--mb", type=float, default=20.8)
    args = parser.parse_args()
    size = int(args.mb * 1_000_000)
    with tempfile.TemporaryDirectory(prefix="upload-memory-") as tmp_name:
        tmp = Path(tmp_name)
        live, stop = start_live_service(tmp / "live", worker=False, env_overrides={
            "SUBMISSION_MAX_BYTES": str(size + 1_000_000)})
        try:
            live.manage("make_operator", "kim@example.org", "--create", "--password", "kim-password-123")
            token = live.manage("shell", "-c", "from accounts.models import ApiToken; from django.contrib.auth "
                                "import get_user_model; print(ApiToken.issue(get_user_model().objects.get("
                                "email='kim@example.org'), 't')[1])").split()[-1]
            archives = []
            for number in range(args.uploads):
                path = tmp / f"a{number}.tar.gz"
                path.write_bytes(os.urandom(size))
                archives.append(path)
            workers = _children(live.web.pid)
            time.sleep(2)
            before = _rss_mb(workers)
            samples: list[float] = []
            done = threading.Event()

            def sample() -> None:
                while not done.is_set():
                    samples.append(_rss_mb(workers))
                    time.sleep(0.05)

            codes: list[int] = []
            barrier = threading.Barrier(len(archives))

            def post(path: Path) -> None:
                with httpx.Client(base_url=live.url, headers={"Authorization": f"Bearer {token}"},
                                  timeout=300) as client, path.open("rb") as fh:
                    barrier.wait()
                    codes.append(client.post("/api/v1/submissions/", files={"archive": (path.name, fh)}).status_code)

            sampler = threading.Thread(target=sample)
            sampler.start()
            started = time.monotonic()
            threads = [threading.Thread(target=post, args=(path,)) for path in archives]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            elapsed = time.monotonic() - started
            time.sleep(5)
            done.set()
            sampler.join()
            after = _rss_mb(workers)
            print(f"{args.uploads} uploads of {size / 1e6:.1f} MB by one user, {len(workers)} granian worker(s): "
                  f"{dict(sorted(Counter(codes).items()))} in {elapsed:.1f} s")
            print(f"worker RSS: before {before:.0f} MB, peak {max(samples):.0f} MB, 5 s after {after:.0f} MB")
        finally:
            stop()


if __name__ == "__main__":
    main()
