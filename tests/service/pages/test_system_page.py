"""`/systems/<system key>/`: one model + runtime + machine across every pack it has results for
(issue 32 item 6), reached from the run page and the answer."""

import pytest

pytestmark = pytest.mark.django_db


def test_a_system_page_joins_every_pack_its_depth_rows_and_its_history(client, publish):
    smoke = publish("2026-04-29-llama-server-smoke")
    sweep = publish("2026-04-29-llama-server-runtime")
    assert smoke.system_key and smoke.system_key == sweep.system_key  # one machine, one model, one runtime
    page = client.get(f"/systems/{smoke.system_key}/").content.decode()
    for pack in ("smoke-chat", "runtime-sweep"):
        assert f">{pack} " in page, pack
    assert f'href="/runs/{smoke.pk}/"' in page and f'href="/runs/{sweep.pk}/"' in page
    assert "Apple M5 Max · 64 GB" in page  # the machine in words
    assert "None of these runs has been reproduced" in page
    # the run page links to it
    assert f'href="/systems/{smoke.system_key}/"' in client.get(f"/runs/{smoke.pk}/").content.decode()
    assert client.get("/systems/0000000000000000/").status_code == 404
