"""`/models/` and `/models/<model>/`: every public result of one model, best system per pack."""

import pytest

from tests.service.pages._entity_checks import HIDDEN_MODEL, check_hidden, check_index_and_page

pytestmark = pytest.mark.django_db


def test_a_model_page_lists_its_packs_cases_and_runs(client, publish, variant):
    run = publish(variant("2026-04-29-llama-server-runtime", "b100", runtime=("llama.cpp", "b100")))
    publish("2026-04-29-llama-server-smoke")
    html = check_index_and_page(client, "/models/", f"/models/{run.model}/", ["runtime-sweep", "smoke-chat", "short", f"/runs/{run.pk}/"])
    assert "timeline" in html  # per-case rows link their timelines


def test_a_model_with_slashes_in_its_name_has_a_page(client, publish):
    run = publish("2026-04-28-mlx-lm-smoke")
    check_index_and_page(client, "/models/", f"/models/{run.model}/", ["smoke-chat"])


def test_a_model_whose_only_runs_are_hidden_has_no_page(client, hidden_runs):
    check_hidden(client, "/models/", f"/models/{HIDDEN_MODEL}/")
