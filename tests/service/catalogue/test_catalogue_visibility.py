"""Nothing that is not approved, or that was withdrawn or unpublished, reaches any catalogue query."""

import pytest

from registry_site.catalogue import leaderboard as lb
from registry_site.catalogue import transitions
from registry_site.catalogue.models import LeaderboardEntry, PublishedRun
from submissions import states
from submissions.review import reject
from submissions.tasks import validate_submission


@pytest.fixture
def catalogue(approve_bundle, submit, bundle_archive, operator, submitter, make_user):
    """One public run, one withdrawn, one unpublished, one quarantined and one rejected submission."""
    public = approve_bundle("2026-04-29-llama-server-runtime")
    bob, carol = make_user("bob@example.org"), make_user("carol@example.org")
    withdrawn = approve_bundle("2026-04-28-mlx-lm-runtime", user=bob)
    unpublished = approve_bundle("2026-04-30-llama-server-desktop-django-wrap", user=carol)
    quarantined = submit(bundle_archive("2026-04-29-llama-server-smoke"))
    rejected = submit(bundle_archive("2026-04-28-mlx-lm-smoke"))
    for s in (quarantined, rejected):
        assert validate_submission(str(s.pk)) == states.QUARANTINED
    reject(rejected.pk, operator, "duplicate")
    assert transitions.withdraw(PublishedRun.objects.get(submission=withdrawn).pk, bob, "wrong model")
    assert transitions.unpublish(PublishedRun.objects.get(submission=unpublished).pk, operator, "bad data")
    hidden = PublishedRun.objects.exclude(submission=public)
    return {"public": PublishedRun.objects.get(submission=public), "hidden_runs": set(hidden.values_list("pk", flat=True))}


def _shown(entries):
    return {e.representative_run_id for e in entries}


def test_only_public_runs_have_leaderboard_rows(catalogue):
    from registry_site.catalogue.models import PublishedCase

    for entry in LeaderboardEntry.objects.all():
        assert entry.representative_run_id == catalogue["public"].pk
        if entry.case:  # the runs behind the row: public ones only
            behind = PublishedCase.objects.filter(workload_key=entry.workload_key, system_key=entry.system_key,
                                                  case=entry.case).values_list("run_id", flat=True)
            assert entry.run_count == len(set(behind) - catalogue["hidden_runs"]) == 1
    assert {b["pack_id"] for b in lb.boards()} == {"runtime-sweep"}  # not smoke-chat, not desktop-django-wrap


@pytest.mark.parametrize("pack, case", [("runtime-sweep", ""), ("runtime-sweep", "short"), ("smoke-chat", ""),
                                        ("smoke-chat", "capital"), ("desktop-django-wrap", "")])
def test_no_hidden_run_reaches_a_board_workload_or_filter(catalogue, pack, case):
    for workload in lb.workloads_of(pack, case):
        board = lb.leaderboard(pack, case, workload.key)
        for filters in (lb.Filters(), lb.Filters(model="mlx-community/Qwen2.5-0.5B-Instruct-4bit"),
                        lb.Filters(provenance="self-reported"), lb.Filters(hardware_class="apple-m5-max-64gb")):
            assert not _shown(lb.leaderboard_entries(pack, case, workload.key, filters)) & catalogue["hidden_runs"]
        assert all(e.representative_run_id == catalogue["public"].pk for e in board.entries)
    if pack != "runtime-sweep":
        assert lb.workloads_of(pack, case) == []


def test_no_hidden_run_reaches_an_entity_query(catalogue):
    for kind, value in [("model", "mlx-community/Qwen2.5-0.5B-Instruct-4bit"), ("model", "qwen2.5-0.5b-instruct-q4_k_m"),
                        ("hardware", "apple-m5-max-64gb"), ("runtime", "")]:
        assert not _shown(lb.entity_entries(kind, value)) & catalogue["hidden_runs"]
        assert not set(lb.entity_runs(kind, value).values_list("pk", flat=True)) & catalogue["hidden_runs"]
        for entry in lb.best_per_pack(kind, value):
            assert entry.representative_run_id == catalogue["public"].pk
    models = {row["model"] for row in lb.entities("model")}
    assert models == {"qwen2.5-0.5b-instruct-q4_k_m"}
    assert not set(PublishedRun.objects.public().values_list("pk", flat=True)) & catalogue["hidden_runs"]


def test_a_guessed_workload_of_a_hidden_run_is_an_error_not_a_board(catalogue):
    from registry_site.catalogue.models import PublishedCase

    hidden_workload = PublishedCase.objects.filter(run_id__in=catalogue["hidden_runs"]).values_list(
        "workload_key", flat=True).first()
    with pytest.raises(lb.QueryError) as refused:
        lb.leaderboard("runtime-sweep", "short", hidden_workload)
    assert refused.value.param == "workload"


def test_public_cases_are_those_of_public_runs_only(catalogue):
    from registry_site.catalogue.models import PublishedCase

    public = set(PublishedCase.objects.public().values_list("run_id", flat=True))
    assert public == {catalogue["public"].pk}
    assert set(PublishedCase.objects.values_list("run_id", flat=True)) >= catalogue["hidden_runs"]
