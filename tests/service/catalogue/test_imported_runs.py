"""A run imported from another tool (`benchpack import`, docs/interop.md "In the registry") is labelled
"imported from TOOL VERSION" on its page, on every board row (a badge with words), and in the API (a field);
the default lists of boards leave imported boards out, and list them apart only when asked.

The imported bundle is made by `benchpack import guidellm` from GuideLLM's own golden file (tests/data/interop),
beside a Benchpack-measured run of a real llama-server, and both go through upload, validation and approval."""

from __future__ import annotations

import re

import pytest

from benchpack.bundles.archives import pack_archive
from benchpack.cli import main
from registry_site.catalogue.models import LeaderboardEntry, PublishedRun
from submissions import states
from submissions.tasks import validate_submission
from tests.data_paths import DATA
from tests.service.vouch import approve

pytestmark = pytest.mark.django_db
LABEL = "imported from guidellm 0.8.1"


@pytest.fixture
def published(submit, operator, bundle_archive, tmp_path):
    def approved(archive) -> PublishedRun:
        submission = submit(archive)
        assert validate_submission(str(submission.pk)) == states.QUARANTINED
        assert approve(submission.pk, operator)
        return PublishedRun.objects.get(submission=submission)

    bundle = tmp_path / "imported-bundle"
    assert main(["import", "guidellm", str(DATA / "interop" / "guidellm-benchmarks.json"), "--out", str(bundle),
                 "--runtime", "llama.cpp b6123"]) == 0
    imported = approved(pack_archive(bundle, tmp_path / "imported.tar.gz"))
    measured = approved(bundle_archive())
    return imported, measured


def test_the_imported_run_says_so_on_its_page_and_in_the_api(client, published):
    imported, measured = published
    assert (imported.imported_from, measured.imported_from) == (LABEL, "")
    page = client.get(f"/runs/{imported.pk}/").content.decode()
    assert re.search(r'class="badge badge-imported">imported from guidellm 0\.8\.1<', page)
    assert "not measured by Benchpack" in page
    assert "badge-imported" not in client.get(f"/runs/{measured.pk}/").content.decode()
    assert client.get(f"/api/v1/runs/{imported.pk}/").json()["imported_from"] == LABEL
    assert client.get(f"/api/v1/runs/{measured.pk}/").json()["imported_from"] == ""
    listed = {r["id"]: r["imported_from"] for r in client.get("/api/v1/runs/").json()["results"]}
    assert listed == {imported.pk: LABEL, measured.pk: ""}
    for choice, expected in (("include", {imported.pk, measured.pk}), ("exclude", {measured.pk}),
                             ("only", {imported.pk})):
        answer = client.get(f"/api/v1/runs/?imported={choice}")
        assert {r["id"] for r in answer.json()["results"]} == expected, choice
    for board_index in ("/api/v1/leaderboards/?imported=", "/api/v1/leaderboards/?imported=sometimes"):
        answer = client.get(board_index)
        assert answer.status_code == 400 and list(answer.json()["fields"]) == ["imported"], answer.json()
    refused = client.get("/api/v1/runs/?imported=sometimes")
    assert refused.status_code == 400 and list(refused.json()["fields"]) == ["imported"], refused.json()


def test_imported_rows_are_on_their_own_boards_with_a_badge_in_words(client, published):
    imported, measured = published
    entries = LeaderboardEntry.objects.all()
    assert {e.imported_from for e in entries.filter(pack_id="imported-guidellm")} == {LABEL}
    assert {e.imported_from for e in entries.exclude(pack_id="imported-guidellm")} == {""}
    # never one board: no workload holds both an imported and a Benchpack-measured row
    imported_workloads = set(entries.exclude(imported_from="").values_list("workload_key", flat=True))
    assert imported_workloads and not imported_workloads & set(
        entries.filter(imported_from="").values_list("workload_key", flat=True))
    board = client.get("/leaderboards/imported-guidellm/").content.decode()
    assert board.count(f'class="badge badge-imported" title="measured by another tool') >= 1
    assert f">{LABEL}</span>" in board
    api = client.get("/api/v1/leaderboards/imported-guidellm/").json()
    assert api["results"] and {r["imported_from"] for r in api["results"]} == {LABEL}
    measured_board = client.get(f"/api/v1/leaderboards/{measured.pack_id}/").json()
    assert {r["imported_from"] for r in measured_board["results"]} == {""}


def test_the_default_board_lists_leave_imported_boards_out_and_show_them_apart_on_request(client, published):
    imported, measured = published
    index = client.get("/leaderboards/").content.decode()
    assert f"/leaderboards/{measured.pack_id}/" in index and "/leaderboards/imported-guidellm/" not in index
    assert "?imported=include" in index  # says they exist, and how to see them
    shown = client.get("/leaderboards/?imported=include").content.decode()
    assert "/leaderboards/imported-guidellm/" in shown and f"/leaderboards/{measured.pack_id}/" in shown
    apart = shown.split('id="imported"', 1)
    assert len(apart) == 2 and "imported-guidellm" not in apart[0] and LABEL in apart[1]
    only = client.get("/leaderboards/?imported=only").content.decode()
    assert "/leaderboards/imported-guidellm/" in only and f"/leaderboards/{measured.pack_id}/" not in only
    assert client.get("/leaderboards/?imported=maybe").status_code == 400
    home = client.get("/").content.decode()
    assert "/leaderboards/imported-guidellm/" not in home and f">{LABEL}</span>" in home  # latest runs: labelled

    def packs(query=""):
        return {(b["pack_id"], b["imported_from"]) for b in client.get(f"/api/v1/leaderboards/{query}").json()["results"]}

    assert packs() == {(measured.pack_id, "")}
    assert packs("?imported=include") == {(measured.pack_id, ""), ("imported-guidellm", LABEL)}
    assert packs("?imported=only") == {("imported-guidellm", LABEL)}
    bad = client.get("/api/v1/leaderboards/?imported=yes")
    assert bad.status_code == 400 and "imported" in bad.content.decode()


@pytest.mark.django_db(transaction=True)
def test_runs_published_before_the_label_existed_get_it_from_their_run_metadata(published):
    """Migration 0009: the column is new; an imported run's label comes from run-metadata.json `imported.label`
    (which the bundle check `imported` ties to the manifest's source), and its board rows are rebuilt."""
    from django.core.management import call_command

    imported, measured = published
    call_command("migrate", "registry_site", "0008", verbosity=0)
    call_command("migrate", "registry_site", verbosity=0)
    assert PublishedRun.objects.get(pk=imported.pk).imported_from == LABEL
    assert PublishedRun.objects.get(pk=measured.pk).imported_from == ""
    assert set(LeaderboardEntry.objects.filter(pack_id="imported-guidellm").values_list("imported_from", flat=True)) \
        == {LABEL}
