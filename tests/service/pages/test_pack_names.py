"""Every page and API object that names a pack to a visitor names it in words (issue 32 item 5), and a
whole-pack board says what its speeds aggregate (item 4)."""

import html
import re

import pytest

from registry_site.catalogue.models import PublishedCase

pytestmark = pytest.mark.django_db
SWEEP = "Chat speed · Short, medium and long prompts"


@pytest.fixture
def sweep(publish):
    return publish("2026-04-29-llama-server-runtime")


def test_pages_name_the_pack_by_kind_of_work_and_title(client, sweep, publish):
    assert sweep.pack_id == "runtime-sweep"
    board = client.get("/leaderboards/runtime-sweep/").content.decode()
    assert re.search(rf"<h1>{SWEEP} <small>runtime-sweep {re.escape(sweep.pack_version)} · whole pack</small></h1>",
                     board), board[:3000]
    assert "Fixed-size prompt sweep for repeated local runtime measurements" in board  # the manifest's description
    index = client.get("/leaderboards/").content.decode()
    assert f"<h2>{SWEEP} <small>runtime-sweep</small></h2>" in index
    run = client.get(f"/runs/{sweep.pk}/").content.decode()
    assert f"<h1>{SWEEP} · {sweep.model}" in run and f">{SWEEP}</a> <small>pack runtime-sweep" in run
    system = client.get(f"/systems/{sweep.system_key}/").content.decode()
    assert f">{SWEEP}</a> <small>runtime-sweep {sweep.pack_version}</small>" in system
    home = client.get("/").content.decode()
    assert SWEEP in home
    smoke = publish()
    compare = client.get(f"/compare/?runs={smoke.pk},{sweep.pk}").content.decode()
    assert f"<td>{SWEEP} <small>runtime-sweep {sweep.pack_version}</small></td>" in compare
    assert f"<td>Smoke test · One short question <small>smoke-chat {smoke.pack_version}</small></td>" in compare


def test_the_api_gives_each_pack_its_title_and_kind(client, sweep):
    expected = {"id": "runtime-sweep", "title": "Short, medium and long prompts", "kind": "Chat speed",
                "description": "Fixed-size prompt sweep for repeated local runtime measurements, with cold prompts"}
    assert client.get("/api/v1/leaderboards/runtime-sweep/").json()["board"]["pack"] == expected
    index = client.get("/api/v1/leaderboards/").json()["results"]
    assert {row["pack"]["title"] for row in index} == {expected["title"]}
    assert client.get(f"/api/v1/runs/{sweep.pk}/").json()["pack"] == expected
    assert client.get("/api/v1/runs/").json()["results"][0]["pack"] == expected


def test_a_whole_pack_board_says_its_speeds_pool_the_base_cases_it_names(client, sweep):
    """Issue 32 item 4: a whole-pack TTFT is a median over short, medium and long prompts; the header says so."""
    cases = sorted(PublishedCase.objects.filter(run=sweep).values_list("case", flat=True))
    assert cases == ["long", "medium", "short"]
    said = ("the median over the pack's 3 base cases (long, medium, short) for each run — a summary across "
            "different prompts, lane levels left out; each case's own board compares like with like")
    board = html.unescape(client.get("/leaderboards/runtime-sweep/").content.decode())
    assert f'<span class="figures-over">{said}</span>' in board
    assert client.get("/api/v1/leaderboards/runtime-sweep/").json()["board"]["figures_over"] == said
    case_board = client.get("/api/v1/leaderboards/runtime-sweep/short/").json()["board"]
    assert case_board["figures_over"] == "the median over case short's rows only"
    assert "figures-over" not in client.get("/leaderboards/runtime-sweep/short/").content.decode()


def test_a_one_case_pack_says_so(client, publish):
    publish()  # smoke-chat: one case
    assert client.get("/api/v1/leaderboards/smoke-chat/").json()["board"]["figures_over"] == \
        "the median over the pack's one case (capital)"
