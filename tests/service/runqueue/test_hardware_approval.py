"""A host's hardware class is an operator's: fixed at approval, never from the host's own reports.

A host that reports a GPU it does not have cannot make itself eligible to
reproduce someone else's run; an unapproved host's requests end before they
run; only `manage.py runner_host approve` sets or changes the class.
"""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command

from submissions.runqueue import states, tokens
from submissions.runqueue.models import RunnerHost

pytestmark = pytest.mark.django_db

API = "/api/runner/v1/"
H200_BOX = {"hostname": "gpu-box", "chip": None, "cpu_model": "AMD EPYC 9454 48-Core Processor", "ram_mb": 1048576,
            "gpus": [{"model": "NVIDIA H200", "memory_mb": 143771}] * 8}
LAPTOP = {"hostname": "laptop", "cpu_model": "Intel(R) Core(TM) i5-8250U CPU @ 1.60GHz", "ram_mb": 16384, "gpus": []}


def _post(client, token, path, body):
    return client.post(API + path, data=json.dumps(body), content_type="application/json",
                       HTTP_AUTHORIZATION=f"Bearer {token}")


def test_the_hosts_own_reports_never_set_its_class(client, make_host):
    host = make_host("gpu-new", approved=False)
    token = tokens.issue(host)
    assert _post(client, token, "heartbeat/", {"worker": "w", "hardware": H200_BOX}).status_code == 200
    host.refresh_from_db()
    assert host.hardware == H200_BOX and host.hardware_class == ""  # kept for the operator to look at

    out = StringIO()
    call_command("runner_host", "list", stdout=out)
    assert "hardware not approved (reports amd-epyc-9454+8x-nvidia-h200+1024gb)" in out.getvalue()

    call_command("runner_host", "approve", "gpu-new", stdout=StringIO())
    host.refresh_from_db()
    assert host.hardware_class == "amd-epyc-9454+8x-nvidia-h200+1024gb"
    # Later reports (another machine behind the same token, say) change nothing but the report.
    _post(client, token, "heartbeat/", {"worker": "w", "hardware": LAPTOP})
    host.refresh_from_db()
    assert host.hardware_class == "amd-epyc-9454+8x-nvidia-h200+1024gb" and host.hardware_changed

    call_command("runner_host", "approve", "gpu-new", "--hardware-class", "intel-core-i5-8250u+no-gpu+16gb",
                 stdout=StringIO())
    host.refresh_from_db()
    assert host.hardware_class == "intel-core-i5-8250u+no-gpu+16gb"


def test_an_unapproved_host_cannot_run_and_cannot_be_approved_on_nothing(client, make_host, queue):
    from django.core.management.base import CommandError

    host = make_host("gpu-new", approved=False)
    with pytest.raises(CommandError, match="reported no hardware with a known class"):
        call_command("runner_host", "approve", "gpu-new", stdout=StringIO())
    request = queue(host)
    answer = _post(client, tokens.issue(host), f"runs/{request.pk}/claim/", {"worker": "w"}).json()
    assert answer["claimed"] is False and answer["state"] == states.FAILED
    assert "no approved hardware class" in answer["reason"]


def test_a_host_is_eligible_to_reproduce_only_on_its_approved_class(client, make_host, operator):
    from registry_site.catalogue.models import PublishedRun
    from submissions.runqueue.reproduction import matching_targets
    from tests.service.runqueue.conftest import MODEL

    original = PublishedRun(pack_id="smoke-chat", pack_version="x", model=MODEL, adapter="openai-chat",
                            hardware_class="amd-epyc-9454+8x-nvidia-h200+1024gb",
                            run_metadata={"runtime": {"name": "benchpack-refserver", "version": "scripted"},
                                          "model": {"quantization": "none"}})
    host = make_host("laptop", approved=False)
    RunnerHost.objects.filter(pk=host.pk).update(hardware_class="intel-core-i5-8250u+no-gpu+16gb")
    # It claims the original's hardware in every report: not eligible, its approved class decides.
    _post(client, tokens.issue(host), "heartbeat/", {"worker": "w", "hardware": H200_BOX})
    targets, misses = matching_targets(original, operator)
    assert targets == [] and misses == ["laptop: hardware intel-core-i5-8250u+no-gpu+16gb"]
    RunnerHost.objects.filter(pk=host.pk).update(hardware_class="")
    assert matching_targets(original, operator)[1] == ["laptop: hardware not approved yet"]
