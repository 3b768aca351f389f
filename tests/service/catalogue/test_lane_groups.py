"""A run with lane rows publishes one case row per lane level, never one pooled median.

The result directories are real llama-server lane runs (tests/data/lanes-results)."""

import pytest

from registry_site.catalogue.models import LeaderboardEntry, PublishedCase
from tests.service import lane_runs


@pytest.fixture
def approve_lane_run(tmp_path, submit, operator):
    return lambda name: lane_runs.approve_lane_run(name, tmp_path, submit, operator)


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
