"""Anonymous catalogue pages are served from a per-process cache until the catalogue changes."""

import pytest

from registry_site.pages import page_cache

pytestmark = pytest.mark.django_db
BOARD = "/leaderboards/runtime-sweep/short/"


def test_a_second_visit_is_served_from_the_cache_with_the_same_etag(client, publish, django_assert_max_num_queries):
    publish("2026-04-29-llama-server-runtime")
    first = client.get(BOARD)
    with django_assert_max_num_queries(1):  # the catalogue version only
        second = client.get(BOARD)
    assert second.content == first.content and second["ETag"] == first["ETag"]
    assert client.get(BOARD, HTTP_IF_NONE_MATCH=first["ETag"]).status_code == 304


def test_every_catalogue_change_shows_at_once(client, publish, variant, operator, submitter):
    from registry_site.catalogue import transitions

    run = publish(variant("2026-04-29-llama-server-runtime", "a"))
    before = client.get(BOARD)
    assert f'value="{run.pk}"' in before.content.decode()
    assert transitions.flag(run.pk, operator, "suspicious TTFT")
    flagged = client.get(BOARD)
    assert "suspicious TTFT" in flagged.content.decode() and flagged["ETag"] != before["ETag"]
    assert client.get(BOARD, HTTP_IF_NONE_MATCH=before["ETag"]).status_code == 200
    other = publish(variant("2026-04-29-llama-server-runtime", "b", runtime=("llama.cpp", "b2")))
    assert f'value="{other.pk}"' in client.get(BOARD).content.decode()
    assert transitions.withdraw(other.pk, submitter, "wrong build")
    assert f'value="{other.pk}"' not in client.get(BOARD).content.decode()
    assert transitions.unpublish(run.pk, operator, "bad")
    assert client.get(BOARD).status_code == 404


def test_signed_in_visitors_get_their_own_page_not_the_cached_one(client, publish, submitter):
    publish("2026-04-29-llama-server-runtime")
    anonymous = client.get(BOARD).content.decode()
    client.force_login(submitter)
    mine = client.get(BOARD).content.decode()
    assert "Log out" in mine and "Log out" not in anonymous and "ETag" not in client.get(BOARD)


def test_the_cache_is_bounded(client, publish, monkeypatch):
    publish("2026-04-29-llama-server-runtime")
    monkeypatch.setattr(page_cache, "MAX_PAGES", 2)
    for order in ("decode_tps", "ttft_s", "wall_s"):
        client.get(f"{BOARD}?order={order}")
    assert len(page_cache._pages) == 2
