"""`/leaderboards/`: every pack and case with a board; nothing from runs that are not public."""

import pytest

pytestmark = pytest.mark.django_db


def test_every_board_is_linked_with_its_system_count(client, publish):
    publish("2026-04-29-llama-server-runtime")
    publish("2026-04-29-llama-server-smoke")
    html = client.get("/leaderboards/").content.decode()
    for href in ("/leaderboards/runtime-sweep/", "/leaderboards/runtime-sweep/short/", "/leaderboards/smoke-chat/capital/"):
        assert f'href="{href}"' in html
    assert "1 system" in html


def test_a_pack_with_only_hidden_runs_has_no_board(client, hidden_runs):
    html = client.get("/leaderboards/").content.decode()
    assert "runtime-sweep" not in html and "No approved results yet" in html
    assert client.get("/leaderboards/runtime-sweep/").status_code == 404
