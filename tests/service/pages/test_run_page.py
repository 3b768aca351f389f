"""`/runs/<id>/`: hardware in words, metadata as fields, raw-row links, actions; public runs only."""

import pytest

from registry_site.catalogue.pages.describe import gpus_in_words, hardware_in_words, metadata_fields

pytestmark = pytest.mark.django_db


def test_hardware_is_described_in_words_without_hostname_or_kernel(client, publish):
    run = publish()
    html = client.get(f"/runs/{run.pk}/").content.decode()
    assert "Apple M5 Max" in html and "64 GiB" in html and "macOS" in html
    for secret in ("atlas.local", run.hardware["hostname"], "25.4.0", "macOS-26.4.1", "Mach-O"):
        assert secret not in html


def test_a_host_label_the_submitter_chose_is_shown():
    facts = dict(hardware_in_words({"hostname": "bench-rig-1", "host_label": True, "cpu_model": "AMD Ryzen 9 7950X",
                                    "gpus": [{"model": "NVIDIA GeForce RTX 4090", "vram_mb": 24564}] * 2,
                                    "ram_mb": 65536, "platform": "linux", "kernel": "6.8.0-45-generic"}))
    assert facts == {"CPU": "AMD Ryzen 9 7950X", "GPU": "2 × NVIDIA GeForce RTX 4090 (24 GiB each)", "RAM": "64 GiB",
                     "OS": "Linux", "Host label": "bench-rig-1"}
    assert "Host label" not in dict(hardware_in_words({"hostname": "host-1a2b3c4d5e", "host_label": False}))
    assert gpus_in_words([]) is None


def test_metadata_is_shown_as_fields_with_paths_hidden():
    fields = dict(metadata_fields({"runtime": {"name": "llama.cpp", "version": ["b1", "b2"]}, "complete": True,
                                   "model": {"path": "/home/alice/models/q.gguf", "quantization": None},
                                   "notes": "C:\\Users\\bob\\x"}))
    assert fields == {"runtime.name": "llama.cpp", "runtime.version": "b1, b2", "complete": "yes",
                      "model.path": "(hidden: looks like a file path)", "model.quantization": "—",
                      "notes": "(hidden: looks like a file path)"}


def test_the_page_shows_answered_and_correct_separately_and_links_the_downloads(client, publish):
    run = publish()
    html = client.get(f"/runs/{run.pk}/").content.decode()
    assert "<th>answered</th><th>correct</th>" in html
    assert f'href="/runs/{run.pk}/rows.jsonl"' in html and f'href="/runs/{run.pk}/rows.csv"' in html
    assert "{&#x27;" not in html and "{'" not in html  # no Python dict reprs


def test_only_the_submitter_sees_withdraw_and_only_operators_see_moderation(client, publish, submitter, operator, make_user):
    run = publish()
    anonymous = client.get(f"/runs/{run.pk}/").content.decode()
    assert "Withdraw" not in anonymous and "Unpublish" not in anonymous
    client.force_login(submitter)
    mine = client.get(f"/runs/{run.pk}/").content.decode()
    assert "Withdraw this result" in mine and "Unpublish" not in mine
    client.force_login(make_user("mallory@example.org"))
    assert "Withdraw" not in client.get(f"/runs/{run.pk}/").content.decode()
    client.force_login(operator)
    ops = client.get(f"/runs/{run.pk}/").content.decode()
    assert "Unpublish" in ops and "Flag" in ops and "Withdraw this result" not in ops


def test_runs_that_are_not_public_are_not_found_by_guessed_url(client, publish, hidden_runs):
    assert client.get(f"/runs/{publish().pk}/").status_code == 200
    for run in (hidden_runs["withdrawn"], hidden_runs["unpublished"]):
        assert client.get(f"/runs/{run.pk}/").status_code == 404
    assert client.get("/runs/999999/").status_code == 404


def test_an_approved_submission_links_its_public_run(client, publish, submitter):
    run = publish()
    client.force_login(submitter)
    html = client.get(f"/submissions/{run.submission_id}/").content.decode()
    assert f'href="/runs/{run.pk}/"' in html
