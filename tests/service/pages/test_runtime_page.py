"""`/runtimes/` and `/runtimes/<name>/`: every public result of one runtime, all versions."""

import pytest

from tests.service.pages._entity_checks import check_hidden, check_index_and_page

pytestmark = pytest.mark.django_db


def test_a_runtime_page_lists_every_version(client, publish, variant):
    for version in ("b100", "b200"):
        publish(variant("2026-04-29-llama-server-runtime", version, runtime=("llama.cpp", version)))
    html = check_index_and_page(client, "/runtimes/", "/runtimes/llama.cpp/", ["b100", "b200", "runtime-sweep"])
    assert html.count("/runs/") >= 2


def test_a_runtime_whose_only_runs_are_hidden_has_no_page(client, publish, variant, operator):
    from registry_site.catalogue import transitions

    run = publish(variant("2026-04-29-llama-server-runtime", "x", runtime=("secret-rt", "1")))
    assert transitions.unpublish(run.pk, operator, "test")
    assert "secret-rt" not in client.get("/runtimes/").content.decode()
    assert client.get("/runtimes/secret-rt/").status_code == 404
    check_hidden(client, "/runtimes/", "/runtimes/secret-rt/")
