"""`/compare/?runs=…`: 2–4 public runs side by side, the parity gate and the reason when not comparable."""

import pytest

pytestmark = pytest.mark.django_db


def test_two_runs_of_one_pack_show_medians_ratios_and_the_parity_reason(client, publish, variant):
    slow = publish(variant("2026-04-29-llama-server-runtime", "slow", speed=1.0))
    fast = publish(variant("2026-04-29-llama-server-runtime", "fast", speed=2.0, runtime=("llama.cpp", "b200")))
    html = client.get(f"/compare/?runs={slow.pk},{fast.pk}").content.decode()
    assert "Not comparable" not in html and "baseline" in html
    assert html.count('<section class="compare-case">') == 3  # short, medium, long
    assert "×0.50" in html  # twice as fast: half the wall time and TTFT
    assert "outside-noise" in html  # three repetitions each: the bootstrap can call it
    assert "Prefill parity: <code>" in html


def test_runs_of_different_packs_say_why_they_are_not_comparable(client, publish):
    smoke = publish("2026-04-29-llama-server-smoke")
    sweep = publish("2026-04-29-llama-server-runtime")
    html = client.get(f"/compare/?runs={smoke.pk},{sweep.pk}").content.decode()
    assert "Not comparable" in html and "different packs" in html and "no such case" in html


@pytest.mark.parametrize("query, status, needle", [
    ("runs=1", 400, "give 2 to 4"), ("runs=1,2,3,4,5", 400, "give 2 to 4"), ("runs=1,abc", 400, "&#x27;abc&#x27; is not a run id"),
    ("runs=999998,999999", 404, "no public run with id 999998, 999999"),
])
def test_bad_requests_get_one_clear_error(client, query, status, needle):
    response = client.get(f"/compare/?{query}")
    assert response.status_code == status and needle in response.content.decode()


def test_an_empty_form_is_a_page_not_an_error(client):
    response = client.get("/compare/")
    assert response.status_code == 200 and 'name="runs"' in response.content.decode()


def test_hidden_runs_cannot_be_compared_by_guessed_id(client, publish, hidden_runs):
    visible = publish("2026-04-29-llama-server-runtime")
    for run in (hidden_runs["withdrawn"], hidden_runs["unpublished"]):
        response = client.get(f"/compare/?runs={visible.pk},{run.pk}")
        assert response.status_code == 404 and "mlx-community" not in response.content.decode()


def test_a_flagged_run_shows_its_note_on_the_comparison(client, publish, variant, operator):
    from registry_site.catalogue import transitions

    a = publish(variant("2026-04-29-llama-server-runtime", "a"))
    b = publish(variant("2026-04-29-llama-server-runtime", "b", runtime=("llama.cpp", "b2")))
    assert transitions.flag(b.pk, operator, "clock skew on this host")
    html = client.get(f"/compare/?runs={a.pk},{b.pk}").content.decode()
    assert f"#{b.pk} is flagged by an operator:</strong> clock skew on this host" in html
