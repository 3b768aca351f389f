"""/api/v1/systems/: one row per system key with its whole-pack leaderboard rows."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db


def test_systems_group_runs_by_system_key(client, catalogue):
    runs = catalogue["runs"]
    systems = {s["system_key"]: s for s in client.get("/api/v1/systems/").json()["results"]}
    assert set(systems) == {r.system_key for r in runs.values()}
    shared = runs["runtime"].system_key
    assert runs["smoke"].system_key == shared and systems[shared]["packs"] == 2 and systems[shared]["runs"] == 2


def test_system_detail_lists_its_rows_and_inputs(client, catalogue):
    run = catalogue["runs"]["mlx_runtime"]
    body = client.get(f"/api/v1/systems/{run.system_key}/").json()
    assert body["model"] == run.model and body["inputs"]["kind"] == "system"
    assert [e["system_key"] for e in body["entries"]] == [run.system_key]


@pytest.mark.parametrize("key", ["nope", "a" * 200, "%00"])
def test_unknown_system_is_a_json_404(client, catalogue, key):
    response = client.get(f"/api/v1/systems/{key}/")
    assert response.status_code == 404 and response.json()["code"] == "not_found"
