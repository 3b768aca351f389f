"""/api/v1/models/, /runtimes/, /hardware-classes/: the index and each one's best row per pack."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db


def test_model_index_and_detail(client, catalogue):
    run = catalogue["runs"]["mlx_runtime"]
    models = {m["model"]: m for m in client.get("/api/v1/models/").json()["results"]}
    assert models[run.model]["runs"] == 1
    detail = client.get(f"/api/v1/models/{run.model}/").json()  # the name has a slash
    assert detail["name"] == run.model and detail["run_count"] == 1
    assert [row["pack_id"] for row in detail["best_per_pack"]] == [run.pack_id]
    assert client.get("/api/v1/models/nobody/").status_code == 404


def test_hardware_class_index_and_detail(client, catalogue):
    run = catalogue["runs"]["runtime"]
    classes = [h["hardware_class"] for h in client.get("/api/v1/hardware-classes/").json()["results"]]
    assert classes == [run.hardware_class]
    detail = client.get(f"/api/v1/hardware-classes/{run.hardware_class}/").json()
    assert detail["run_count"] == 3 and {r["pack_id"] for r in detail["best_per_pack"]} == {"runtime-sweep", "smoke-chat"}


def test_runtime_index_leaves_out_runs_without_a_runtime(client, catalogue):
    assert client.get("/api/v1/runtimes/").json()["count"] == 0  # the fixture's runs do not name their runtime
    assert client.get("/api/v1/runtimes/llama.cpp/").status_code == 404
