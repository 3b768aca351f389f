"""A run with lane rows publishes one case row per lane level, never one pooled median.

The result directories are real llama-server lane runs (tests/data/lanes-results)."""

import shutil

import pytest

from benchpack.bundles.archives import pack_archive
from benchpack.bundles.create import create_bundle
from registry_site.catalogue.models import LeaderboardEntry, PublishedCase
from submissions import states
from tests.service.vouch import approve
from submissions.tasks import validate_submission
from tests.data_paths import LANES_RESULTS


@pytest.fixture
def approve_lane_run(tmp_path, submit, operator):
    def do(name):
        source = tmp_path / name
        shutil.copytree(LANES_RESULTS / name, source)
        bundle = create_bundle([source], tmp_path / f"bundle-{name}", "self-reported")
        submission = submit(pack_archive(bundle, tmp_path / f"{name}.tar.gz"))
        assert validate_submission(str(submission.pk)) == states.QUARANTINED
        assert approve(submission.pk, operator)
        return submission

    return do


def test_each_depth_is_its_own_case_row_with_its_own_workload(approve_lane_run):
    approve_lane_run("2026-12-01-llama-server-lanes-depth")
    cases = {c.case: c for c in PublishedCase.objects.all()}
    assert set(cases) == {f"short @depth={d}" for d in (0, 512, 1024, 2048, 3072)}
    assert all(c.rows == 3 for c in cases.values())
    assert len({c.workload_key for c in cases.values()}) == 5
    assert [cases[f"short @depth={d}"].workload_fields["fields"]["depth_tokens"] for d in (0, 3072)] == [0, 3072]
    # deeper context, slower decode: the pooled median would have hidden it
    assert cases["short @depth=3072"].decode_tps < cases["short @depth=0"].decode_tps
    boards = set(LeaderboardEntry.objects.exclude(case="").values_list("case", "workload_key"))
    assert boards == {(c.case, c.workload_key) for c in cases.values()}


def test_each_concurrency_level_is_its_own_case_row(approve_lane_run):
    approve_lane_run("2026-12-01-llama-server-lanes-concurrency")
    rows = dict(PublishedCase.objects.values_list("case", "rows"))
    assert rows == {f"short @concurrency={n}": 16 for n in (1, 2, 4, 8)}
