"""Published provenance is earned by the server; a bundle's provenance is a claim, shown as such.
Runs measured against the scripted endpoint are demo data everywhere and never ranked with real systems."""

from __future__ import annotations

import importlib
import json

import pytest

from benchpack.bundles.archives import pack_archive
from benchpack.bundles.create import create_bundle
from benchpack.refserver.server import RefServer
from benchpack.packs.loader import bundled_packs_dir, load_pack
from benchpack.run.runner import RunOptions, run_pack
from registry_site.catalogue.models import LeaderboardEntry, PublishedRun
from submissions import states
from tests.service.vouch import approve
from submissions.tasks import validate_submission

pytestmark = pytest.mark.django_db


@pytest.fixture
def approved(submit, operator):
    def do(archive, user=None):
        submission = submit(archive, user=user)
        assert validate_submission(str(submission.pk)) == states.QUARANTINED
        assert approve(submission.pk, operator)
        return PublishedRun.objects.get(submission=submission)

    return do


def test_an_upload_claiming_independently_reproduced_is_published_self_reported(client, bundle_archive, approved):
    run = approved(bundle_archive(provenance="independently-reproduced"))
    assert (run.provenance, run.claimed_provenance) == ("self-reported", "independently-reproduced")
    assert "not verified" in run.provenance_basis

    api = client.get(f"/api/v1/runs/{run.pk}/").json()
    assert api["provenance"] == "self-reported" and api["claimed_provenance"] == "independently-reproduced"
    # The filter uses the earned value: the claim never lists it beside real reproductions.
    assert client.get("/api/v1/runs/?provenance=independently-reproduced").json()["results"] == []
    assert [r["id"] for r in client.get("/api/v1/runs/?provenance=self-reported").json()["results"]] == [run.pk]
    page = client.get(f"/runs/{run.pk}/").content.decode()
    assert "claimed" in page and "independently-reproduced" in page
    assert set(LeaderboardEntry.objects.filter(representative_run=run).values_list("provenance", flat=True)) == \
        {"self-reported"}


def test_an_operators_upload_is_operator_curated_whatever_it_claims(bundle_archive, approved, make_user):
    from accounts.operators import make_operator

    curator = make_user("curator@example.org")
    make_operator(curator)
    run = approved(bundle_archive(provenance="self-reported"), user=curator)
    assert (run.provenance, run.claimed_provenance) == ("operator-curated", "self-reported")


def _scripted_result(tmp_path):
    pack = load_pack(bundled_packs_dir() / "smoke-chat")
    with RefServer(responses=["Paris."], ttft_s=0.005, itl_s=0.001) as srv:
        outcome = run_pack(pack, RunOptions(adapter="openai-chat", model="refserver-model", endpoint=srv.openai_url,
                                            out=tmp_path / "results" / "scripted-smoke"))
    assert outcome.rows and all(row["ok"] for row in outcome.rows)
    return tmp_path / "results" / "scripted-smoke"


def test_a_cli_run_against_the_scripted_endpoint_is_demo_data_and_never_ranked(tmp_path, client, bundle_archive,
                                                                               approved):
    result = _scripted_result(tmp_path)
    metadata = json.loads((result / "run-metadata.json").read_text())
    assert metadata["runtime"]["name"] == "benchpack-refserver" and metadata["benchpack"]["scripted_endpoint"]
    archive = pack_archive(create_bundle([result], tmp_path / "bundle", "self-reported"), tmp_path / "scripted.tar.gz")
    scripted = approved(archive)
    real = approved(bundle_archive("2026-04-29-llama-server-smoke"))
    assert scripted.is_demo is True and real.is_demo is False

    api = client.get(f"/api/v1/runs/{scripted.pk}/").json()
    assert api["is_demo"] is True
    board = client.get(f"/api/v1/leaderboards/{real.pack_id}/").json()
    ranked = {row.get("representative_run") or row.get("run") for row in board["results"]}
    assert all(not row["is_demo"] for row in board["results"]) and board["results"], board
    assert scripted.pk not in ranked
    page = client.get(f"/runs/{scripted.pk}/").content.decode()
    assert "demo" in page.lower()


def test_the_backfill_re_derives_every_published_run_and_counts(tmp_path, bundle_archive, approved, capsys):
    from django.apps import apps

    run = approved(bundle_archive(provenance="independently-reproduced"))
    scripted_dir = _scripted_result(tmp_path)
    scripted = approved(pack_archive(create_bundle([scripted_dir], tmp_path / "b2", "self-reported"),
                                     tmp_path / "s.tar.gz"))
    # As published before earned provenance: the claim taken as verified, the scripted run ranked as real.
    PublishedRun.objects.filter(pk=run.pk).update(provenance="independently-reproduced", claimed_provenance="",
                                                  provenance_basis="")
    PublishedRun.objects.filter(pk=scripted.pk).update(provenance="operator-curated", is_demo=False)
    migration = importlib.import_module("registry_site.catalogue.migrations.0006_earned_provenance")
    migration.forwards(apps, None)
    assert "earned provenance: 2 of 2 published runs changed (1 measured against the scripted endpoint" in \
        capsys.readouterr().out
    run.refresh_from_db(), scripted.refresh_from_db()
    assert (run.provenance, run.claimed_provenance) == ("self-reported", "independently-reproduced")
    assert (scripted.provenance, scripted.is_demo) == ("self-reported", True)
    assert set(LeaderboardEntry.objects.filter(representative_run=run).values_list("provenance", flat=True)) == \
        {"self-reported"}
