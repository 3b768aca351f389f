"""GET /api/v1/runner-hosts/: online state, hardware class and allowlists by name (no URLs)."""

from __future__ import annotations

from django.utils import timezone


def test_it_lists_hosts_with_their_state(client, operator, host):
    host.heartbeat_at, host.hardware_class = timezone.now(), "amd-epyc+no-gpu+32gb"
    host.save()
    client.force_login(operator)
    [entry] = client.get("/api/v1/runner-hosts/").json()
    assert entry["name"] == "gpu-a" and entry["queue"] == "runs.gpu-a" and entry["online"] is True
    assert entry["endpoints"] == [{"name": "ref", "adapter": "openai-chat", "models": ["scripted-demo"],
                                   "runtime": "benchpack-refserver scripted"}]
    assert {p["id"] for p in entry["packs"]} == {"smoke-chat", "runtime-sweep"}
    assert "http" not in str(entry)


def test_owners_see_only_their_own(client, host, make_host, make_user):
    make_host("gpu-b", owner=make_user("b@example.org"))
    client.force_login(host.owner)
    assert [h["name"] for h in client.get("/api/v1/runner-hosts/").json()] == ["gpu-a"]
