"""Leaderboard rows are written in the approval transaction, one per (workload, system)."""

import pytest

from registry_site.catalogue import leaderboard
from registry_site.catalogue.models import LeaderboardEntry, PublishedCase, PublishedRun


def test_it_writes_entries_with_the_runs_keys_when_a_run_is_approved(approve_bundle):
    approve_bundle("2026-04-29-llama-server-runtime")
    run = PublishedRun.objects.get()
    cases = list(PublishedCase.objects.filter(run=run))
    assert run.system_key and all(c.workload_key and c.system_key == run.system_key for c in cases)
    entries = LeaderboardEntry.objects.filter(pack_id="runtime-sweep")
    assert {e.case for e in entries} == {c.case for c in cases} | {""}
    short = entries.get(case="short")
    assert short.run_count == 1 and short.representative_run == run
    assert short.decode_tps == PublishedCase.objects.get(run=run, case="short").decode_tps
    assert short.decode_tps_min == short.decode_tps_max == short.decode_tps
    assert short.answered == PublishedCase.objects.get(run=run, case="short").ok_rows
    # this fixture has no run-metadata.json: the runtime stays unknown, never "comparable"
    assert short.runtime_name == "" and not short.system_complete
    assert "runtime_name" in short.system_fields["unknown"]
    assert short.hardware_class == "apple-m5-max-64gb"


def test_two_runs_of_one_system_share_a_row_and_spread(approve_bundle, make_user):
    approve_bundle("2026-04-29-llama-server-runtime")
    other = make_user("bob@example.org")
    approve_bundle("2026-04-29-llama-server-smoke", user=other)
    boards = {(b["pack_id"], b["case"]) for b in leaderboard.boards()}
    assert ("runtime-sweep", "short") in boards and ("smoke-chat", "") in boards


def test_the_query_functions_rank_one_workload(approve_bundle):
    approve_bundle("2026-04-29-llama-server-runtime")
    board = leaderboard.leaderboard("runtime-sweep", "short")
    assert board.workload is not None and [w.key for w in board.workloads] == [board.workload.key]
    assert list(board.entries) == list(LeaderboardEntry.objects.filter(pack_id="runtime-sweep", case="short"))
    with pytest.raises(leaderboard.QueryError) as bad:
        leaderboard.leaderboard("runtime-sweep", "short", order="colour")
    assert bad.value.param == "order"
    with pytest.raises(leaderboard.QueryError) as bad:
        leaderboard.Filters.from_params({"since": "yesterday"})
    assert bad.value.param == "since"


@pytest.mark.parametrize("order", [o for name in leaderboard.SORTABLE for o in (name, "-" + name)])
def test_a_board_says_what_it_ranks_by_in_words_for_every_sortable_column(order):
    """"ranked by tpot_s" or "model_family" is a field name, not an answer (issue 24 §3)."""
    said = leaderboard.order_label(order)
    words = said.split(":")[0]
    assert "_" not in words and words.strip()
    assert said.endswith("— reversed") == order.startswith("-")


def test_checked_rows_rank_ahead_of_unchecked_ones_on_every_board_view(approve_bundle, client):
    """Issue 30 item 5: an unchecked row with a faster figure (an invented GPU) never ranks #1; the
    board page, its API and the answer show the verdict, and the unchecked group reads apart."""
    approve_bundle("2026-04-29-llama-server-runtime")
    real = LeaderboardEntry.objects.get(pack_id="runtime-sweep", case="short")
    assert real.plausibility in ("plausible", "unchecked", "implausible") and real.plausibility_runs
    for key, verdict, decode in (("fast-unchecked", "unchecked", 9_000.0), ("slow-plausible", "plausible", 1.0),
                                 ("fastest-implausible", "implausible", 99_000.0)):
        clone = LeaderboardEntry.objects.get(pk=real.pk)
        clone.pk, clone.system_key, clone.model = None, key, key
        clone.plausibility, clone.plausibility_runs, clone.decode_rate = verdict, {verdict: 1}, decode
        clone.save()
    LeaderboardEntry.objects.filter(pk=real.pk).delete()
    for order in ("decode_rate", "-decode_rate", "model"):
        ranked = [e.model for e in leaderboard.leaderboard("runtime-sweep", "short", order=order).entries]
        assert ranked == ["slow-plausible", "fast-unchecked", "fastest-implausible"], (order, ranked)
    api = client.get("/api/v1/leaderboards/runtime-sweep/short/").json()["results"]
    assert [(r["model"], r["rank"], r["plausibility"]) for r in api] == [
        ("slow-plausible", 1, "plausible"), ("fast-unchecked", 2, "unchecked"),
        ("fastest-implausible", 3, "implausible")]
    page = client.get("/leaderboards/runtime-sweep/short/").content.decode()
    assert page.index("slow-plausible") < page.index("Not checked for plausibility") < page.index("fast-unchecked") \
        < page.index("Implausible for their hardware") < page.index("fastest-implausible")
    assert ">plausible</span>" in page and ">not checked</span>" in page and ">implausible</span>" in page
