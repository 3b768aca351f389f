"""Publish real result directories the way a user would: bundle, submit over HTTP, validate, approve.

The submissions are not demo data (`is_demo` stays false): their rows are real measurements, and the
registry says so — self-reported (an upload's earned provenance), without the demo badge, on the boards
of their own workloads.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Callable

RESULTS = Path(__file__).resolve().parent / "results"
# The account that uploads the seed's M5 Max runs: their measurer is not a user of this registry, so the
# upload is an account of its own, as anyone importing their old result directories would have.
REAL_SUBMITTER = "real-results@benchpack.local"
REAL_REASON = ("real result directories measured on an Apple M5 Max by the seed implementation of the Benchpack "
               "format, kept in the repository (registry_site/demo_real/README.md)")
MACHINE = "an Apple M5 Max"


def result_dirs() -> list[Path]:
    return sorted(path for path in RESULTS.iterdir() if (path / "run.jsonl").is_file())


def publish_real_results(server_url: str, operator, say: Callable[[str], None] = print) -> int:
    """Upload the seed's real result directories as one self-reported bundle and approve it.
    Returns how many runs were published (0 when they already are)."""
    from accounts.models import ApiToken
    from registry_site.demo_data import ensure_submitter
    from submissions.models import Submission

    submitter = ensure_submitter(REAL_SUBMITTER)
    if Submission.objects.filter(submitter=submitter).exists():
        say("real results already present; skipping")
        return 0
    dirs = result_dirs()
    _, token = ApiToken.issue(submitter, "demo: real result directories")
    say(f"real results: {len(dirs)} runs measured on {MACHINE} (mlx-lm and llama-server), uploaded as "
        f"self-reported by {REAL_SUBMITTER} — real measurements, not demo data")
    return submit_and_approve(dirs, server_url, token, operator, REAL_REASON, "real results", say)


def submit_and_approve(dirs: list[Path], server_url: str, token: str, operator, reason: str, what: str,
                       say: Callable[[str], None]) -> int:
    """Bundle `dirs` (self-reported), submit with `token`, wait for validation, approve as `operator`
    (`reason` is recorded only when a run's plausibility asks for one). Returns the runs published."""
    from benchpack.bundles.create import create_bundle
    from benchpack.bundles.submit import submit_bundle
    from registry_site.demo_data import _state_words
    from submissions.review import approve_with_reason

    with tempfile.TemporaryDirectory(prefix="benchpack-demo-real-") as tmp:
        bundle = create_bundle(dirs, Path(tmp) / "bundle", "self-reported")
        # no line per state: the console stays a screenful (test_e2e_demo_walk); only a failure is said
        result = submit_bundle(bundle, server_url, token, timeout_s=300)
    state = result.submission["state"]
    if state != "quarantined":
        say(f"{what}: submission ended {_state_words(state)}; not approving")
        return 0
    return len(dirs) if approve_with_reason(result.submission["id"], operator, reason) else 0
