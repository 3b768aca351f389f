"""A small public catalogue built the way production builds it: real bundles,
validated, then approved (published) or left quarantined/rejected."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _no_throttle_carry_over(db):
    from django.core.cache import cache

    cache.clear()  # throttle counts live in the shared cache; each test starts fresh


@pytest.fixture
def catalogue(submit, bundle_archive, operator, make_user):
    from accounts.operators import make_operator
    from submissions import states
    from submissions.review import reject
    from tests.service.vouch import approve
    from submissions.tasks import validate_submission

    # Published provenance is earned: "runtime" is operator-curated because an operator uploaded it.
    curator = make_user("curator@example.org")
    make_operator(curator)
    made = {}
    for key, result, provenance in (
        ("smoke", "2026-04-29-llama-server-smoke", "self-reported"),
        ("runtime", "2026-04-29-llama-server-runtime", "operator-curated"),
        ("mlx_runtime", "2026-04-28-mlx-lm-runtime", "self-reported"),
        ("quarantined", "2026-04-28-mlx-lm-smoke", "self-reported"),
        ("rejected", "2026-04-30-llama-server-desktop-django-wrap", "self-reported"),
    ):
        submission = submit(bundle_archive(result, provenance=provenance), user=curator if key == "runtime" else None)
        assert validate_submission(str(submission.pk)) == states.QUARANTINED, key
        made[key] = submission
    for key in ("smoke", "runtime", "mlx_runtime"):
        assert approve(made[key].pk, operator)
    reject(made["rejected"].pk, operator, "not for the public catalogue")
    made["runs"] = {key: made[key].published_runs.get() for key in ("smoke", "runtime", "mlx_runtime")}
    return made


@pytest.fixture
def publish_variant(submit, bundle_archive, operator, tmp_path):
    """`publish_variant(base, name, speed=…, runtime=…)`: a scaled copy of a real result dir
    (tests.service.variants), through the real intake → validate → approve path."""
    from registry_site.catalogue.models import PublishedRun
    from submissions import states
    from tests.service.vouch import approve
    from submissions.tasks import validate_submission
    from tests.service.variants import make_variant

    def do(base, name, **changes):
        make_variant(tmp_path / "results", base, name, **changes)
        submission = submit(bundle_archive(name))
        assert validate_submission(str(submission.pk)) == states.QUARANTINED
        assert approve(submission.pk, operator)
        return PublishedRun.objects.get(submission=submission)

    return do
