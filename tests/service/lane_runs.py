"""The real llama-server lane runs of tests/data/lanes-results, uploaded, validated and approved as a user's
self-reported results are: the depth-curve, chart and lane-group tests each start from one."""

from __future__ import annotations

import shutil

from benchpack.bundles.archives import pack_archive
from benchpack.bundles.create import create_bundle
from submissions import states
from submissions.tasks import validate_submission
from tests.data_paths import LANES_RESULTS
from tests.service.vouch import approve

DEPTH_RUN = "2026-12-01-llama-server-lanes-depth"


def approve_lane_run(name: str, tmp_path, submit, operator):
    """Bundle the lane run `name`, submit it, validate it to quarantine and approve it; its submission."""
    source = tmp_path / name
    shutil.copytree(LANES_RESULTS / name, source)
    bundle = create_bundle([source], tmp_path / f"bundle-{name}", "self-reported")
    submission = submit(pack_archive(bundle, tmp_path / f"{name}.tar.gz"))
    assert validate_submission(str(submission.pk)) == states.QUARANTINED
    assert approve(submission.pk, operator)
    return submission
