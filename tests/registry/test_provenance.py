"""Provenance is earned by the server, never taken from a bundle's claim; the scripted endpoint says what it is."""

from __future__ import annotations

import pytest

from benchpack.refserver.server import LIKE_LLAMA_SERVER, RefServer
from benchpack.results import provenance as p
from benchpack.run import server_info


def test_one_list_of_words_claims_are_a_subset_of_earned():
    assert p.CLAIMS == ("self-reported", "operator-curated", "independently-reproduced")
    assert p.EARNED == ("self-reported", "runner-host", "operator-curated", "independently-reproduced")
    assert [p.RANK[name] for name in p.EARNED] == [0, 1, 2, 3]


@pytest.mark.parametrize("facts, earned", [
    ({"uploaded_by_operator": False}, "self-reported"),
    ({"uploaded_by_operator": True}, "operator-curated"),
    ({"uploaded_by_operator": False, "runner_host": "gpu-a"}, "runner-host"),
    ({"uploaded_by_operator": False, "runner_host": "gpu-a", "queued_by_operator": True}, "runner-host"),
    ({"uploaded_by_operator": False, "runner_host": "gpu-a", "host_run_by_operator": True}, "runner-host"),
    ({"uploaded_by_operator": False, "runner_host": "gpu-a", "queued_by_operator": True,
      "host_run_by_operator": True}, "operator-curated"),
    ({"uploaded_by_operator": False, "reproduced": True}, "independently-reproduced"),
])
def test_earned_provenance_from_facts(facts, earned):
    assert p.earned_provenance(**facts) == earned


def test_no_fact_earns_independently_reproduced_but_the_judge():
    for by_operator in (False, True):
        for host in (None, "gpu-a"):
            assert p.earned_provenance(uploaded_by_operator=by_operator, runner_host=host, queued_by_operator=True,
                                       host_run_by_operator=True) != p.INDEPENDENTLY_REPRODUCED


@pytest.mark.parametrize("metadata, scripted", [
    (None, False),
    ({}, False),
    ({"runtime": {"name": "llama-server", "version": "b5040"}}, False),
    ({"runtime": {"name": "benchpack-refserver", "version": "scripted"}}, True),
    ({"runtime": {"name": "llama-server", "version": "benchpack-refserver"}}, True),
    ({"benchpack": {"scripted_endpoint": True}}, True),
    ({"benchpack": {"server_probes": [{"request": "GET /props", "scripted": "benchpack-refserver"}]}}, True),
    ({"benchpack": {"scripted_endpoint": False, "server_probes": [{"request": "GET /props"}]}}, False),
])
def test_is_scripted(metadata, scripted):
    assert p.is_scripted(metadata) is scripted


@pytest.mark.parametrize("like", [{}, LIKE_LLAMA_SERVER])
def test_the_real_scripted_endpoint_announces_itself_and_the_probe_records_it(like):
    with RefServer(responses=["hi"], **like) as srv:
        info = server_info.probe_server("openai-chat", srv.openai_url, "refserver-model")
    assert info.scripted is True
    assert server_info.announced_runtime(info)[0] == "benchpack-refserver"  # even when it imitates llama-server
    assert any(probe.get("scripted", "").startswith("benchpack-refserver") for probe in info.probes)
    assert p.is_scripted({"benchpack": {"server_probes": info.probes}})
