"""A small public catalogue built the way production builds it: real bundles,
validated, then approved (published) or left quarantined/rejected."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _no_throttle_carry_over(db):
    from django.core.cache import cache

    cache.clear()  # throttle counts live in the shared cache; each test starts fresh


@pytest.fixture
def catalogue(submit, bundle_archive, operator):
    from submissions import states
    from submissions.review import approve, reject
    from submissions.tasks import validate_submission

    made = {}
    for key, result, provenance in (
        ("smoke", "2026-04-29-llama-server-smoke", "self-reported"),
        ("runtime", "2026-04-29-llama-server-runtime", "operator-curated"),
        ("mlx_runtime", "2026-04-28-mlx-lm-runtime", "self-reported"),
        ("quarantined", "2026-04-28-mlx-lm-smoke", "self-reported"),
        ("rejected", "2026-04-30-llama-server-desktop-django-wrap", "self-reported"),
    ):
        submission = submit(bundle_archive(result, provenance=provenance))
        assert validate_submission(str(submission.pk)) == states.QUARANTINED, key
        made[key] = submission
    for key in ("smoke", "runtime", "mlx_runtime"):
        assert approve(made[key].pk, operator)
    reject(made["rejected"].pk, operator, "not for the public catalogue")
    made["runs"] = {key: made[key].published_runs.get() for key in ("smoke", "runtime", "mlx_runtime")}
    return made
