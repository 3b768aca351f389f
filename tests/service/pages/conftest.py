"""Published runs for the page tests: real result directories through the real intake → validate → approve path."""

from __future__ import annotations

import pytest

from registry_site.catalogue.models import PublishedRun
from submissions import states
from tests.service.vouch import approve
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
def hidden_runs(publish, make_user):
    """One run in each state that must never be public: quarantined (never approved), withdrawn, unpublished.
    Their own submitter, so the tests' other uploads keep under the per-user upload limit."""
    from registry_site.catalogue.models import UNPUBLISHED, WITHDRAWN

    owner = make_user("hidden-runs@example.org")
    quarantined = publish("2026-04-28-mlx-lm-runtime", approved=False, user=owner)
    withdrawn = publish("2026-04-28-mlx-lm-runtime", provenance="operator-curated", user=owner)
    unpublished = publish("2026-04-28-mlx-lm-runtime", provenance="independently-reproduced", user=owner)
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
    """`variant(base, name, …)`: tests.service.variants.make_variant into the folder `bundle_archive` reads first."""
    from tests.service.variants import make_variant

    return lambda base, name, **changes: make_variant(tmp_path / "results", base, name, **changes)
