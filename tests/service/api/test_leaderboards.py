"""/api/v1/leaderboards/: the index, pack and case boards, filters, order, paging, CSV."""

from __future__ import annotations

import csv
import io

import pytest

pytestmark = pytest.mark.django_db


@pytest.fixture
def board_url(catalogue):
    return f"/api/v1/leaderboards/{catalogue['runs']['runtime'].pack_id}/"


def test_index_lists_every_board_with_a_url(client, catalogue):
    boards = client.get("/api/v1/leaderboards/").json()["results"]
    assert {"runtime-sweep", "smoke-chat"} <= {b["pack_id"] for b in boards}
    for board in boards:
        assert client.get(board["url"]).status_code == 200, board


def test_a_board_ranks_one_workload_best_first_by_a_figure_every_row_has(client, catalogue, board_url):
    body = client.get(board_url).json()
    results = body["results"]
    assert body["board"]["workload"]["key"]
    assert {r["workload_key"] for r in results} == {body["board"]["workload"]["key"]}
    # decode (1/tpot_s) when every row has it; a seed row without tpot_s has none, so the board ranks by TTFT
    expected = "decode_rate" if all(r["decode_rate"] is not None for r in results) else "ttft_s"
    assert body["board"]["order"] == expected
    assert all(r[expected] is not None for r in results)
    times = [r["ttft_s"] for r in results]
    ranked = client.get(board_url + "?order=ttft_s").json()["results"]
    assert [r["ttft_s"] for r in ranked] == sorted(times) and [r["rank"] for r in ranked] == [1, 2]
    descending = client.get(board_url + "?order=-ttft_s").json()["results"]
    assert [r["ttft_s"] for r in descending] == sorted(times, reverse=True)


def test_the_legacy_decode_tps_is_never_ranked(client, catalogue, board_url):
    response = client.get(board_url + "?order=decode_tps")
    assert response.status_code == 400 and "order" in response.json()["fields"]


def test_rank_counts_across_pages(client, catalogue, board_url):
    second = client.get(board_url + "?page_size=1&page=2").json()
    assert [r["rank"] for r in second["results"]] == [2] and second["previous"]


def test_filters_hit_and_miss(client, catalogue, board_url):
    run = catalogue["runs"]["mlx_runtime"]
    hit = client.get(board_url, {"model": run.model}).json()["results"]
    assert [r["model"] for r in hit] == [run.model]
    assert client.get(board_url, {"accelerator": "no-such-chip"}).json()["results"] == []
    assert client.get(board_url, {"provenance": "operator-curated"}).json()["count"] == 1
    assert client.get(board_url, {"since": "2999-01-01"}).json()["count"] == 0


@pytest.mark.parametrize("query, parameter", [("order=colour", "order"), ("workload=nope", "workload"),
                                               ("provenance=hearsay", "provenance"), ("since=NaN", "since"),
                                               ("reproduced=maybe", "reproduced"), ("model=nobody", "model"),
                                               ("page_size=501", "page_size"), ("format=xml", None)])
def test_bad_parameters_are_named(client, catalogue, board_url, query, parameter):
    response = client.get(f"{board_url}?{query}")
    assert response.status_code in (400, 404) and response["Content-Type"].startswith("application/json")
    if parameter:
        assert parameter in response.json()["fields"]


def test_csv_export_has_every_filtered_row(client, catalogue, board_url):
    run = catalogue["runs"]["runtime"]
    response = client.get(board_url + f"?format=csv&model={run.model}")
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert [r["model"] for r in rows] == [run.model] and rows[0]["rank"] == "1"
    error = client.get(board_url + "?format=csv&order=colour")
    assert error.status_code == 400 and error.json()["fields"] == {"order": [error.json()["fields"]["order"][0]]}


def test_a_case_board_and_an_unknown_one(client, catalogue, board_url):
    case = catalogue["runs"]["runtime"].cases.order_by("pk").first().case
    body = client.get(f"{board_url}{case}/").json()
    assert body["board"]["case"] == case and {r["case"] for r in body["results"]} == {case}
    assert client.get(f"{board_url}no-such-case/").status_code == 404
