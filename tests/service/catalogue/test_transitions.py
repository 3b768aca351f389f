"""Withdraw, unpublish, flag: conditional, audited, and the leaderboard follows in the same transaction."""

import pytest

from registry_site.catalogue import transitions
from registry_site.catalogue.transitions import TransitionRefused
from registry_site.catalogue.models import LeaderboardEntry, PublishedRun
from submissions.models import SubmissionEvent


@pytest.fixture
def run(approve_bundle, submitter):
    approve_bundle("2026-04-29-llama-server-runtime", user=submitter)
    return PublishedRun.objects.get()


def test_the_submitter_withdraws_with_a_reason_kept_in_the_audit_trail(run, submitter):
    assert LeaderboardEntry.objects.filter(representative_run=run).exists()
    assert transitions.withdraw(run.pk, submitter, "wrong quantization recorded")
    run.refresh_from_db()
    assert run.status == "withdrawn" and run.status_reason == "wrong quantization recorded"
    assert not PublishedRun.objects.public().exists()
    assert not LeaderboardEntry.objects.exists()
    event = SubmissionEvent.objects.filter(submission=run.submission, to_state="withdrawn").get()
    assert event.actor == submitter and "wrong quantization recorded" in event.reason
    assert not transitions.withdraw(run.pk, submitter, "again")  # the second call changes nothing
    assert SubmissionEvent.objects.filter(to_state="withdrawn").count() == 1


def test_only_the_submitter_may_withdraw_and_a_reason_is_required(run, make_user, submitter, operator):
    with pytest.raises(TransitionRefused, match="only the submitter"):
        transitions.withdraw(run.pk, make_user("mallory@example.org"), "mine now")
    with pytest.raises(TransitionRefused, match="only the submitter"):
        transitions.withdraw(run.pk, operator, "ops cannot withdraw for them")
    with pytest.raises(TransitionRefused, match="reason"):
        transitions.withdraw(run.pk, submitter, "   ")
    assert PublishedRun.objects.public().count() == 1


def test_an_operator_unpublishes_and_republishes(run, operator, submitter):
    with pytest.raises(TransitionRefused, match="operator"):
        transitions.unpublish(run.pk, submitter, "not an operator")
    assert transitions.unpublish(run.pk, operator, "measurement on a throttled laptop")
    assert not PublishedRun.objects.public().exists() and not LeaderboardEntry.objects.exists()
    assert not transitions.unpublish(run.pk, operator, "twice")
    assert not transitions.withdraw(run.pk, submitter, "too late: it is already off the public side")
    assert transitions.republish(run.pk, operator, "throttling ruled out")
    assert PublishedRun.objects.public().count() == 1 and LeaderboardEntry.objects.exists()
    events = list(SubmissionEvent.objects.filter(submission=run.submission, from_state__in=("published", "unpublished"))
                  .values_list("from_state", "to_state"))
    assert events == [("published", "unpublished"), ("unpublished", "published")]


def test_a_flagged_run_stays_public_with_its_note_on_every_row(run, operator):
    assert transitions.flag(run.pk, operator, "runtime version suspected wrong")
    assert PublishedRun.objects.public().count() == 1
    entries = LeaderboardEntry.objects.filter(representative_run=run)
    assert entries.exists() and all(e.flagged and e.flag_note == "runtime version suspected wrong" for e in entries)
    assert not transitions.flag(run.pk, operator, "runtime version suspected wrong")  # unchanged: no event
    assert transitions.unflag(run.pk, operator, "confirmed")
    assert not LeaderboardEntry.objects.filter(flagged=True).exists()
    assert list(SubmissionEvent.objects.filter(to_state__in=("flagged", "unflagged")).values_list("to_state", flat=True)) \
        == ["flagged", "unflagged"]


def test_the_reproduced_badge_follows_a_public_counted_reproduction(run, approve_bundle, make_user, operator):
    from submissions.runqueue.models import Reproduction
    from submissions.runqueue.reproduction import mark_reproduction

    other = make_user("bob@example.org")
    approve_bundle("2026-04-28-mlx-lm-runtime", user=other)
    reproducing = PublishedRun.objects.exclude(pk=run.pk).get()
    Reproduction.objects.create(original=run, reproduction=reproducing, verdict="reproduced", independent=True,
                                tolerance="test")
    mark_reproduction(run, reproducing, matched=True)
    assert PublishedRun.objects.get(pk=run.pk).reproduction_state == "reproduced"
    assert all(e.reproduced for e in LeaderboardEntry.objects.filter(representative_run=run))
    assert LeaderboardEntry.objects.filter(representative_run=reproducing, provenance="independently-reproduced").exists()
    # the reproducing run leaves the public side: it no longer vouches for the original
    assert transitions.withdraw(reproducing.pk, other, "re-measuring")
    assert PublishedRun.objects.get(pk=run.pk).reproduction_state == ""
    assert not LeaderboardEntry.objects.filter(reproduced=True).exists()
