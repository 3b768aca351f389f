"""Approved runs of real bundles, for the catalogue's tests."""

import pytest

from submissions import states
from tests.service.vouch import approve
from submissions.tasks import validate_submission


@pytest.fixture
def approve_bundle(submit, bundle_archive, operator):
    """Submit, validate and approve a real result directory; returns the submission."""

    def do(name, user=None, provenance="self-reported"):
        submission = submit(bundle_archive(name, provenance=provenance), user=user)
        assert validate_submission(str(submission.pk)) == states.QUARANTINED
        assert approve(submission.pk, operator)
        return submission

    return do
