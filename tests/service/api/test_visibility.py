"""Nothing that is not public reaches the API: not by list, filter, export, comparison, timeline or guessed id.

The catalogue fixture approves three runs and leaves one submission
quarantined and one rejected (never published); here the submitter also
withdraws one run and an operator unpublishes another, through the real
transitions (registry_site.catalogue.transitions). One public run remains.
"""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.django_db


@pytest.fixture
def hidden(catalogue, submitter, operator):
    from registry_site.catalogue import transitions

    runs = catalogue["runs"]
    assert transitions.withdraw(runs["smoke"].pk, submitter, "measured with the wrong server flags")
    assert transitions.unpublish(runs["mlx_runtime"].pk, operator, "hardware report does not match the run")
    for run in runs.values():
        run.refresh_from_db()
    return {"withdrawn": runs["smoke"], "unpublished": runs["mlx_runtime"], "public": runs["runtime"]}


def _text(client, url) -> str:
    response = client.get(url)
    assert response.status_code == 200, (url, response.content[:300])
    return response.content.decode()


def _refused(client, url, status=400) -> dict:
    response = client.get(url)
    assert response.status_code == status, (url, response.status_code, response.content[:300])
    return response.json()


def test_lists_show_only_the_public_run(client, hidden):
    public = hidden["public"]
    assert [r["id"] for r in client.get("/api/v1/runs/").json()["results"]] == [public.pk]
    assert {c["run"] for c in client.get("/api/v1/cases/?page_size=500").json()["results"]} == {public.pk}
    systems = client.get("/api/v1/systems/").json()["results"]
    assert [s["system_key"] for s in systems] == [public.system_key]
    boards = client.get("/api/v1/leaderboards/").json()["results"]
    assert {b["pack_id"] for b in boards} == {public.pack_id}
    models = [m["model"] for m in client.get("/api/v1/models/").json()["results"]]
    assert models == [public.model]
    hardware = client.get(f"/api/v1/hardware-classes/{public.hardware_class}/").json()
    assert hardware["run_count"] == 1


def test_no_hidden_run_id_model_or_system_appears_anywhere(client, hidden):
    public = hidden["public"]
    urls = ["/api/v1/runs/", "/api/v1/cases/?page_size=500", "/api/v1/systems/", "/api/v1/leaderboards/",
            f"/api/v1/leaderboards/{public.pack_id}/", f"/api/v1/leaderboards/{public.pack_id}/?format=csv",
            "/api/v1/models/", "/api/v1/runtimes/", "/api/v1/hardware-classes/",
            f"/api/v1/models/{public.model}/", f"/api/v1/systems/{public.system_key}/"]
    for gone in (hidden["withdrawn"], hidden["unpublished"]):
        for url in urls:
            text = _text(client, url)
            assert f"/runs/{gone.pk}/" not in text, url
            assert gone.label not in text, url
            if gone.system_key != public.system_key:
                assert gone.system_key not in text, url
            if gone.model != public.model:
                assert json.dumps(gone.model)[1:-1] not in text, url


def test_guessed_ids_are_404(client, hidden):
    for gone in (hidden["withdrawn"], hidden["unpublished"]):
        assert _refused(client, f"/api/v1/runs/{gone.pk}/", 404)["error"] == f"no public run with id {gone.pk}"
        if gone.system_key != hidden["public"].system_key:
            _refused(client, f"/api/v1/systems/{gone.system_key}/", 404)
    _refused(client, f"/api/v1/runs/{hidden['public'].pk + 100}/", 404)
    _refused(client, f"/api/v1/models/{hidden['unpublished'].model}/", 404)
    _refused(client, "/api/v1/leaderboards/smoke-chat/", 404)


def test_filters_treat_hidden_values_as_unknown(client, hidden):
    withdrawn, unpublished = hidden["withdrawn"], hidden["unpublished"]
    assert "pack" in _refused(client, "/api/v1/runs/?pack=smoke-chat")["fields"]
    assert "model" in _refused(client, f"/api/v1/runs/?model={unpublished.model}")["fields"]
    assert "run" in _refused(client, f"/api/v1/cases/?run={withdrawn.pk}")["fields"]
    assert "model" in _refused(client, f"/api/v1/leaderboards/{unpublished.pack_id}/?model={unpublished.model}")["fields"]


def test_compare_and_timelines_refuse_hidden_runs(client, hidden):
    public, unpublished = hidden["public"], hidden["unpublished"]
    body = _refused(client, f"/api/v1/compare/?runs={public.pk},{unpublished.pk}")
    assert body["fields"] == {"runs": [f"no public run with id {unpublished.pk}"]}
    case = unpublished.cases.first()
    body = _refused(client, f"/api/v1/timelines/?workload={case.workload_key}&model={unpublished.model}"
                            f"&hardware_class={unpublished.hardware_class}")
    assert "model" in body["fields"]


def test_a_flagged_run_stays_public_with_its_note(client, hidden, operator):
    from registry_site.catalogue import transitions

    public = hidden["public"]
    assert transitions.flag(public.pk, operator, "decode speed looks too high for this machine")
    board = client.get(f"/api/v1/leaderboards/{public.pack_id}/").json()
    assert [(row["flagged"], row["flag_note"]) for row in board["results"]] == [
        (True, "decode speed looks too high for this machine")]


def test_a_withdrawal_is_gone_at_once_with_the_response_cache_on(client, catalogue, submitter):
    from django.test import override_settings

    from registry_site.catalogue import transitions

    run = catalogue["runs"]["mlx_runtime"]
    urls = ["/api/v1/runs/", f"/api/v1/leaderboards/{run.pack_id}/", f"/api/v1/leaderboards/{run.pack_id}/?format=csv",
            "/api/v1/models/", "/api/v1/systems/"]
    with override_settings(CATALOGUE_RESPONSE_CACHE=True):
        for url in urls:
            assert run.model in client.get(url).content.decode(), url
        assert client.get(urls[0])["X-Catalogue-Cache"] == "hit"  # served from the cache before the change
        assert transitions.withdraw(run.pk, submitter, "wrong model file")
        for url in urls:
            assert run.model not in client.get(url).content.decode(), url
