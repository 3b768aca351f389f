"""Reproduce a published run on a matching runner host; on approval the verdict
(reproduced / not reproduced, per-case numbers) shows on the run page and in the API."""

from __future__ import annotations

import pytest

from benchpack.run.hardware import collect_hardware
from benchpack.registry.fingerprint import hardware_class
from submissions.runqueue import states
from submissions.runqueue.models import Reproduction
from submissions.runqueue.reproduction import matching_targets, reproduce
from tests.service.runqueue.conftest import MODEL, REPLY

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def steady_endpoint(ref):
    # Timings well above scheduler jitter, so a busy machine does not turn a match into a miss.
    ref.configure(responses=[REPLY], ttft_s=0.03, itl_s=0.01)


@pytest.fixture
def publish_original(ref, tmp_path, operator, django_capture_on_commit_callbacks):
    """A run someone measured by hand on host `lab-box`, uploaded, validated and approved."""
    from benchpack.bundles.archives import pack_archive
    from benchpack.bundles.create import create_bundle
    from benchpack.packs.loader import load_pack, resolve_pack_path
    from benchpack.run.runner import RunOptions, run_pack
    from registry_site.catalogue.models import PublishedRun
    from submissions.intake import receive_upload
    from tests.service.vouch import approve

    def publish(user, pack="runtime-sweep", host_label="lab-box"):
        out = tmp_path / f"{pack}-{host_label}-{user.pk}"
        metadata = {"runtime": {"name": "benchpack-refserver", "version": "scripted"}, "model": {"quantization": "none"}}
        run_pack(load_pack(resolve_pack_path(pack)), RunOptions(adapter="openai-chat", model=MODEL,
                 endpoint=ref.url + "/v1", out=out, host_label=host_label, run_metadata=metadata))
        bundle = create_bundle([out], tmp_path / f"bundle-{out.name}", "self-reported")
        archive = pack_archive(bundle, tmp_path / f"{out.name}.tar.gz")
        with django_capture_on_commit_callbacks(execute=True):
            submission = receive_upload(user, archive.name, archive.read_bytes())
        assert approve(submission.pk, operator)
        return PublishedRun.objects.get(submission=submission)

    return publish


@pytest.fixture
def matching_host(host):
    host.hardware_class = hardware_class(collect_hardware())  # as its worker reports it: this machine
    host.save()
    return host


def _run_and_approve(run_as, host, request, operator):
    from registry_site.catalogue.models import PublishedRun
    from tests.service.vouch import approve

    assert run_as(host, request.pk) == states.FINISHED
    request.refresh_from_db()
    assert request.submission.state == "quarantined"
    assert approve(request.submission.pk, operator)
    return PublishedRun.objects.get(submission=request.submission)


def test_an_independent_matching_reproduction_earns_the_badge(matching_host, make_host, publish_original, submitter,
                                                              operator, run_as, client, ref):
    make_host("other-class", approved=False)  # no approved class: listed as not matching
    original = publish_original(submitter)
    targets, misses = matching_targets(original, operator)
    assert [t.value for t in targets] == ["gpu-a|ref"]
    assert misses == ["other-class: hardware not approved yet"]

    request = reproduce(original, operator, "gpu-a|ref")
    assert (request.reproduction_of, request.repetitions, request.pack.pack_id) == (original, 3, "runtime-sweep")
    reproduction = _run_and_approve(run_as, matching_host, request, operator)

    evidence = Reproduction.objects.get()
    assert (evidence.original, evidence.reproduction) == (original, reproduction)
    assert evidence.verdict == "reproduced" and evidence.independent, evidence.reasons
    assert [c["case"] for c in evidence.cases] == ["short", "medium", "long"]
    reproduction.refresh_from_db()
    assert reproduction.provenance == "independently-reproduced"

    page = client.get(f"/runs/{original.pk}/").content.decode()
    assert "✓ reproduced" in page and f'href="/runs/{reproduction.pk}/"' in page
    assert "different owner on a different host" in page
    api = client.get(f"/api/v1/runs/{original.pk}/").json()["reproduction"]
    assert api["state"] == "reproduced" and api["evidence"]["run"] == reproduction.pk
    assert client.get(f"/api/v1/runs/{reproduction.pk}/").json()["reproduction"]["reproduces"]["run"] == original.pk
    home = client.get("/").content.decode()
    assert f'<a href="/runs/{original.pk}/">A run reproduced independently</a>' in home
    assert "re-measured by its own owner" not in home


def test_a_slower_reproduction_shows_not_reproduced_with_the_numbers(matching_host, publish_original, submitter,
                                                                     operator, run_as, client, ref):
    original = publish_original(submitter)
    ref.configure(responses=[REPLY], ttft_s=0.03, itl_s=0.04)  # the endpoint got 4x slower at decoding
    reproduction = _run_and_approve(run_as, matching_host, reproduce(original, operator, "gpu-a|ref"), operator)
    evidence = Reproduction.objects.get()
    assert evidence.verdict == "not-reproduced" and evidence.independent
    decode = next(c for c in evidence.cases[0]["checks"] if c["metric"] == "decode_rate")  # 1/tpot_s
    assert decode["ok"] is False and decode["reproduction"] < decode["original"] / 2
    page = client.get(f"/runs/{original.pk}/").content.decode()
    assert "✗ not reproduced" in page and "<td>decode</td>" in page and "decode_rate" not in page
    assert client.get(f"/api/v1/runs/{original.pk}/").json()["reproduction"]["state"] == "not-reproduced"
    reproduction.refresh_from_db()
    # A miss earns nothing: a run an operator queued on a host its (non-operator) owner runs.
    assert reproduction.provenance == "runner-host"
    assert reproduction.provenance_basis == "runner host gpu-a, queued by an operator"


def test_a_reproduction_by_the_same_submitter_is_kept_but_does_not_count(matching_host, publish_original, operator,
                                                                       run_as, client):
    original = publish_original(operator)
    _run_and_approve(run_as, matching_host, reproduce(original, operator, "gpu-a|ref"), operator)
    evidence = Reproduction.objects.get()
    assert evidence.verdict == "reproduced" and not evidence.independent
    assert evidence.reasons == ["reproduced by the same owner: the same submitter measured both"]
    page = client.get(f"/runs/{original.pk}/").content.decode()
    assert "✓ reproduced" not in page and "not independent: reproduced by the same owner: the same submitter measured both" in page
    assert client.get(f"/api/v1/runs/{original.pk}/").json()["reproduction"]["state"] == ""
    # the home page's tour names it as what it is (issue 32 item 5), never "reproduced independently"
    home = client.get("/").content.decode()
    assert "A run reproduced independently" not in home
    assert f'<a href="/runs/{original.pk}/#reproduction">A run re-measured by its own owner</a>' in home
    assert "not an independent reproduction" in home


def test_the_reproduce_page_is_for_operators_and_offers_only_matching_hosts(matching_host, publish_original,
                                                                           submitter, operator, client):
    original = publish_original(submitter)
    client.force_login(submitter)
    assert client.get(f"/runs/{original.pk}/reproduce/").status_code == 403
    client.force_login(operator)
    page = client.get(f"/runs/{original.pk}/reproduce/").content.decode()
    assert 'value="gpu-a|ref"' in page and "lab-box" in page
    refused = client.post(f"/runs/{original.pk}/reproduce/", {"target": "gpu-a|elsewhere"})
    assert refused.status_code == 400 and "do not match" in refused.content.decode()
    queued = client.post(f"/runs/{original.pk}/reproduce/", {"target": "gpu-a|ref"})
    assert queued.status_code == 302


def test_one_user_on_both_sides_is_the_same_owner_never_independent(make_host, publish_original, submitter,
                                                                    operator, run_as, client):
    """The submitter's own runner host "reproduces" the submitter's upload, queued by an operator (so the
    reproduction's submitter differs): still the same owner — a plain reproduction, no badge, no upgrade."""
    own_host = make_host("users-own-box", owner=submitter)
    original = publish_original(submitter)
    reproduction = _run_and_approve(run_as, own_host, reproduce(original, operator, "users-own-box|ref"), operator)
    evidence = Reproduction.objects.get()
    assert evidence.verdict == "reproduced" and not evidence.independent
    assert evidence.reasons[0] == ("reproduced by the same owner: runner host users-own-box belongs to the "
                                   "original's submitter")
    reproduction.refresh_from_db()
    assert reproduction.provenance == "runner-host"
    page = client.get(f"/runs/{original.pk}/").content.decode()
    assert "✓ reproduced" not in page and "reproduced by the same owner" in page
    assert client.get(f"/api/v1/runs/{original.pk}/").json()["reproduction"]["state"] == ""
