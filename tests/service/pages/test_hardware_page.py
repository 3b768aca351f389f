"""`/hardware/` and `/hardware/<class>/`: every public result on one hardware class."""

import pytest

from tests.service.pages._entity_checks import check_hidden, check_index_and_page

pytestmark = pytest.mark.django_db


def test_a_hardware_page_lists_the_systems_on_it(client, publish, variant):
    run = publish(variant("2026-04-29-llama-server-runtime", "32g", ram_mb=32768))
    publish("2026-04-29-llama-server-runtime")
    html = check_index_and_page(client, "/hardware/", "/hardware/apple-m5-max-32gb/", ["runtime-sweep", f"/runs/{run.pk}/"])
    assert "apple-m5-max-64gb" not in html.split("<h2>Runs</h2>")[1]


def test_a_class_whose_only_runs_are_hidden_has_no_page(client, publish, variant, submitter):
    from registry_site.catalogue import transitions

    run = publish(variant("2026-04-29-llama-server-runtime", "16g", ram_mb=16384))
    assert transitions.withdraw(run.pk, submitter, "wrong machine")
    check_hidden(client, "/hardware/", "/hardware/apple-m5-max-16gb/")
    assert "apple-m5-max-16gb" not in client.get("/hardware/").content.decode()
