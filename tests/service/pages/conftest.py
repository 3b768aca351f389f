"""Published runs for the page tests: real result directories through the real intake → validate → approve path."""

from __future__ import annotations

import pytest

from registry_site.models import PublishedRun
from submissions import states
from submissions.review import approve
from submissions.tasks import validate_submission


@pytest.fixture
def publish(submit, bundle_archive, operator):
    """`publish(name)` -> the PublishedRun; `approved=False` leaves the submission in quarantine."""

    def do(name="2026-04-29-llama-server-smoke", provenance="self-reported", approved=True, user=None):
        submission = submit(bundle_archive(name, provenance=provenance), user)
        assert validate_submission(str(submission.pk)) == states.QUARANTINED
        if not approved:
            return submission
        assert approve(submission.pk, operator)
        return PublishedRun.objects.get(submission=submission)

    return do


@pytest.fixture
def hidden_runs(publish):
    """One run in each state that must never be public: quarantined (never approved), withdrawn, unpublished."""
    from registry_site.models import UNPUBLISHED, WITHDRAWN

    quarantined = publish("2026-04-28-mlx-lm-runtime", approved=False)
    withdrawn = publish("2026-04-28-mlx-lm-runtime", provenance="operator-curated")
    unpublished = publish("2026-04-28-mlx-lm-runtime", provenance="independently-reproduced")
    _set_status(withdrawn, WITHDRAWN)
    _set_status(unpublished, UNPUBLISHED)
    return {"quarantined": quarantined, "withdrawn": withdrawn, "unpublished": unpublished}


def _set_status(run, status):
    """Through keys' transitions when present; else the same effect on the columns and entries."""
    try:
        from registry_site.catalogue import transitions
    except ImportError:
        transitions = None
    if transitions is not None:
        from django.contrib.auth import get_user_model

        operator = get_user_model().objects.get(email="ops@example.org")
        if status == "withdrawn":
            assert transitions.withdraw(run.pk, run.submission.submitter, "test: withdrawn")
        else:
            assert transitions.unpublish(run.pk, operator, "test: unpublished")
        return
    from django.db import transaction

    from registry_site.catalogue import leaderboard as lb

    with transaction.atomic():
        PublishedRun.objects.filter(pk=run.pk).update(status=status)
        lb.refresh_for_runs([PublishedRun.objects.get(pk=run.pk)])


@pytest.fixture
def variant(tmp_path):
    """`variant(base, name, speed=1.0, runtime=("llama.cpp", "b100"), ram_mb=None)`: a copy of a real
    result directory in the place `bundle_archive` reads first, its timings scaled by `speed`
    (2.0: twice as fast) and its run metadata naming a runtime, so the catalogue sees another system."""
    import json
    import shutil

    from tests.data_paths import REAL_RESULTS

    def make(base, name, speed=1.0, runtime=("llama.cpp", "b100"), ram_mb=None, quantization="Q4_K_M",
             repo_task=None, passed=None):
        """`repo_task=(pack_id, version, case)` relabels every row as that coding pack's case;
        `passed`: one verdict per row."""
        target = tmp_path / "results" / name
        shutil.copytree(REAL_RESULTS / base, target)
        rows = [json.loads(line) for line in (target / "run.jsonl").read_text().splitlines() if line.strip()]
        for row in rows:
            timing = row.get("timing") or {}
            for key in ("wall_s", "ttft_s", "tpot_s"):
                if isinstance(timing.get(key), (int, float)):
                    timing[key] = timing[key] / speed
            for key in ("decode_tps", "total_tps", "prefill_tps"):
                if isinstance(timing.get(key), (int, float)):
                    timing[key] = timing[key] * speed
        if repo_task is not None:
            for row, verdict in zip(rows, passed or [None] * len(rows)):
                row["pack"] = {"id": repo_task[0], "version": repo_task[1]}
                row["case"] = repo_task[2]
                row["scoring"] = {"mode": "verify-script", "passed": verdict}
        (target / "run.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        metadata = {"runtime": {"name": runtime[0], "version": runtime[1]}, "model": {"quantization": quantization}}
        (target / "run-metadata.json").write_text(json.dumps(metadata))
        if ram_mb is not None:
            hardware = json.loads((target / "hardware.json").read_text())
            hardware["ram_mb"] = ram_mb
            (target / "hardware.json").write_text(json.dumps(hardware))
        for path in [target, *target.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)
        return name

    return make
