"""Comparing published runs says what `benchpack compare` says about the same result directories."""

import pytest

from benchpack.reporting.compare import compare_runs
from benchpack.results.resultdir import load_result_dir
from registry_site.catalogue import compare as cc
from registry_site.catalogue.models import PublishedRun
from submissions import states
from tests.service.vouch import approve
from submissions.tasks import validate_submission
from tests.data_paths import REAL_RESULTS


@pytest.fixture
def publish(submit, bundle_archive, operator):
    def do(name, provenance="self-reported", approved=True):
        submission = submit(bundle_archive(name, provenance=provenance))
        assert validate_submission(str(submission.pk)) == states.QUARANTINED
        if approved:
            assert approve(submission.pk, operator)
            return PublishedRun.objects.get(submission=submission)
        return submission

    return do


def test_parse_run_ids_takes_two_to_four_distinct_ids_in_order():
    assert cc.parse_run_ids("5, 3") == [5, 3]
    assert cc.parse_run_ids(["5", "3,9", "5"]) == [5, 3, 9]
    for bad, needle in (("5", "2 to 4"), ("1,2,3,4,5", "2 to 4"), ("1,x", "'x' is not a run id"), ("", "2 to 4"),
                        ("1,-2", "'-2'")):
        with pytest.raises(cc.CompareRequestError, match=needle) as caught:
            cc.parse_run_ids(bad)
        assert caught.value.parameter == "runs"


def test_comparability_reasons_name_the_differing_pack_or_version():
    same = [{"label": "#1", "pack_id": "p", "pack_version": "1.2.0"}, {"label": "#2", "pack_id": "p", "pack_version": "1.2.7"}]
    assert cc.comparability_reasons(same) == []
    minor = [same[0], {"label": "#2", "pack_id": "p", "pack_version": "1.3.0"}]
    assert "#2: 1.3.0" in cc.comparability_reasons(minor)[0]
    other = [same[0], {"label": "#2", "pack_id": "q", "pack_version": "1.2.0"}]
    assert "different packs" in cc.comparability_reasons(other)[0]


def test_medians_parity_and_ratios_match_the_cli_on_the_same_directories(publish):
    mlx = publish("2026-04-28-mlx-lm-smoke")
    llama = publish("2026-04-29-llama-server-smoke")
    result = cc.compare_published([mlx.pk, llama.pk])
    cli = compare_runs([load_result_dir(REAL_RESULTS / "2026-04-28-mlx-lm-smoke"),
                        load_result_dir(REAL_RESULTS / "2026-04-29-llama-server-smoke")])
    assert result.comparable and result.reasons == []
    assert [c.case for c in result.cases] == [c.case for c in cli.cases]
    assert all(c.parity == cli_case.parity for c, cli_case in zip(result.cases, cli.cases))
    for line, cli_case in zip(result.cases, cli.cases):
        for cell, stats in zip(line.cells, cli_case.runs):
            assert cell.medians["ttft_s"] == stats.medians["ttft_s"]
            assert cell.medians["decode_rate"] == stats.medians["decode_rate"]
        base, other = line.cells
        assert base.ratios == {}
        assert other.ratios["wall_s"]["ratio"] == pytest.approx(other.medians["wall_s"] / base.medians["wall_s"])
        assert other.ratios["wall_s"]["verdict"] == cli_case.runs[1].vs_first["wall_s"]["verdict"]
        if line.parity != "comparable":
            assert line.parity_reason and all(c.medians["prefill_tps"] is None for c in line.cells)
    assert [c.run_id for c in result.runs] == [mlx.pk, llama.pk] and all(c.from_rows for c in result.runs)


def test_different_packs_are_not_comparable_and_say_why(publish):
    smoke = publish("2026-04-29-llama-server-smoke")
    sweep = publish("2026-04-29-llama-server-runtime")
    result = cc.compare_published([smoke.pk, sweep.pk])
    assert not result.comparable
    assert "different packs" in result.reasons[0] and "smoke-chat" in result.reasons[0]
    assert all(line.parity == "missing-case" for line in result.cases)


def test_a_run_that_is_not_public_is_reported_like_one_that_does_not_exist(publish):
    smoke = publish("2026-04-29-llama-server-smoke")
    pending = publish("2026-04-28-mlx-lm-smoke", approved=False)
    assert not PublishedRun.objects.filter(submission=pending).exists()
    with pytest.raises(cc.CompareRequestError, match="no public run with id 999999"):
        cc.compare_published([smoke.pk, 999999])
    # a published run whose submission left `approved` (withdrawn, unpublished) is gone too
    other = publish("2026-04-28-mlx-lm-smoke", provenance="operator-curated")
    other.submission.__class__.objects.filter(pk=other.submission_id).update(state="rejected")
    with pytest.raises(cc.CompareRequestError, match=f"no public run with id {other.pk}"):
        cc.compare_published([smoke.pk, other.pk])


def test_runs_stored_without_rows_are_compared_from_their_medians(publish):
    mlx = publish("2026-04-28-mlx-lm-smoke")
    llama = publish("2026-04-29-llama-server-smoke")
    with_rows = cc.compare_published([mlx.pk, llama.pk])
    mlx.rows.all().delete()
    from_medians = cc.compare_published([mlx.pk, llama.pk])
    assert [c.from_rows for c in from_medians.runs] == [False, True]
    assert [c.case for c in from_medians.cases] == [c.case for c in with_rows.cases]
    for a, b in zip(from_medians.cases, with_rows.cases):
        assert a.parity == b.parity
        assert a.cells[1].medians["wall_s"] == b.cells[1].medians["wall_s"]
        assert a.cells[1].ratios["wall_s"]["ratio"] == pytest.approx(b.cells[1].ratios["wall_s"]["ratio"])
        assert a.cells[1].ratios["wall_s"]["verdict"] == "too-few"


def test_cases_are_paged_and_a_page_past_the_end_is_refused(publish):
    mlx = publish("2026-04-28-mlx-lm-smoke")
    llama = publish("2026-04-29-llama-server-smoke")
    total = mlx.cases.count()
    first = cc.compare_published([mlx.pk, llama.pk], per_page=1)
    assert first.pages == total and len(first.cases) == 1 and first.case_count == total
    with pytest.raises(cc.CompareRequestError, match="page"):
        cc.compare_published([mlx.pk, llama.pk], page=total + 1, per_page=1)
