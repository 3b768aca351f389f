"""Issue 29 item 5: the registry answers the coding question from agent-session rows.

Two real runs of one system on a coding pack, each task solved by the demo's scripted coding agent
(a real external-agent process in the bubblewrap sandbox, every model request through the measuring
proxy, against the scripted endpoint at the demo physics' speeds for that machine): one run's agent
applies the fix, the other's answer holds no diff. Published through the real pipeline, the same
system then reads the same on every surface: the board page, the board API, the coding view, the
answer page and the answer API agree on the pass rate (1 of 2, the metric registry's one figure) and
on the agent's decode (median over the runs of each task's median over its turns); the answer judges
`min_decode` on that agent figure and says so.
"""

from __future__ import annotations

import json
from urllib.parse import urlencode

import pytest

from benchpack.bundles.archives import pack_archive
from benchpack.bundles.create import create_bundle
from benchpack.measurement.stats import median
from benchpack.refserver.server import RefServer
from benchpack.results.metrics import metric, pass_interval, pass_text
from registry_site import demo_data
from registry_site import demo_physics as physics
from registry_site.catalogue.models import PublishedRun
from registry_site.catalogue.templatetags.catalogue import sig
from submissions import states
from tests.service.vouch import approve

pytestmark = [pytest.mark.django_db, pytest.mark.bubblewrap, pytest.mark.slow]

PACK = "python-regression-fix"
MODEL, MACHINE = "demo/scripted-coder-7b", "desktop"


def _agent_runs(tmp_path) -> list:
    good, bad = demo_data._coding_replies()
    runs = [demo_data._timed(PACK, MODEL, MACHINE, replies=demo_data._agent_script(reply), agent=True)
            for reply in (good, bad)]
    outs = []
    with RefServer() as ref:
        for index, run in enumerate(runs):
            out = tmp_path / "results" / f"agent-{index}"
            demo_data._run_one(run, ref, out)
            outs.append(out)
    return outs


def test_board_page_board_api_and_answer_agree_on_pass_rate_and_agent_decode(
        tmp_path, submit, operator, client, django_capture_on_commit_callbacks):
    outs = _agent_runs(tmp_path)
    rows = [json.loads(line) for out in outs for line in (out / "run.jsonl").read_text().splitlines()]
    assert [r["scoring"]["passed"] for r in rows] == [True, False]
    sessions = [r["agent_session"] for r in rows]
    assert all(s["turns"] == 3 and s["error_turns"] == 0 and s["prompt_growth_per_turn"] > 0 for s in sessions)
    assert all(0 < s["cache_hit_share"] < 1 for s in sessions)  # the conversation's start came from the cache
    # the demo's speed model for this model on this machine, as the proxy measured it over the agent's turns:
    # decode slows a little as the conversation fills the context (demo_physics.DECODE_DEPTH)
    modelled = physics.speed(MODEL, MACHINE).decode_tps
    assert all(0.85 * modelled < s["decode_tps_p50"] <= 1.02 * modelled for s in sessions), (modelled, sessions)
    # one case per run: the board's figure is the median over the two runs of each task's figure
    agent_decode = median(s["decode_tps_p50"] for s in sessions)
    solution = median(s["time_to_solution_s"] for s in sessions)
    agent_ttft = median(s["ttft_p50_s"] for s in sessions)

    for index, out in enumerate(outs):
        archive = pack_archive(create_bundle([out], tmp_path / f"bundle-{index}", "self-reported"),
                               tmp_path / f"agent-{index}.tar.gz")
        with django_capture_on_commit_callbacks(execute=True):
            submission = submit(archive)
        submission.refresh_from_db()
        assert submission.state == states.QUARANTINED, submission.validation_report
        assert approve(submission.pk, operator) is True
    hardware_class = PublishedRun.objects.values_list("hardware_class", flat=True).distinct().get()

    # the board API: one system, both runs, the pooled pass rate and the agent's figures
    [row] = client.get(f"/api/v1/leaderboards/{PACK}/").json()["results"]
    assert (row["correct"], row["scored"], row["run_count"]) == (1, 2, 2)
    assert row["pass_rate"] == pytest.approx(0.5) and row["pass_interval"] == pytest.approx(list(pass_interval(1, 2)))
    assert row["agent_decode_rate"] == pytest.approx(agent_decode, rel=1e-9)
    assert row["agent_ttft_s"] == pytest.approx(agent_ttft, rel=1e-9)
    assert row["time_to_solution_s"] == pytest.approx(solution, rel=1e-9)
    assert row["agent_decode_rate_min"] <= row["agent_decode_rate"] <= row["agent_decode_rate_max"]
    assert row["decode_rate"] is None  # the coding pack's own request does not stream: the agent's is the speed

    # the board page: the agent's columns, labelled as the metric registry labels them, beside the pass rate
    board = client.get(f"/leaderboards/{PACK}/").content.decode()
    for name in ("agent_decode_rate", "agent_ttft_s", "time_to_solution_s"):
        assert f">{metric(name).label}</a> <small>{metric(name).unit}</small>" in board
    assert '<td class="num">1/2</td><td class="num">50%<br>' in board
    assert f'<td class="num">{sig(row["agent_decode_rate"])}<br>' in board
    assert f'<td class="num">{sig(row["time_to_solution_s"])}<br>' in board
    assert client.get(f"/leaderboards/{PACK}/?order=agent_decode_rate").status_code == 200

    # the coding view: pass rate against the agent's decode by default, the same figures in its table
    coding = client.get("/leaderboards/coding/").content.decode()
    assert 'value="agent_decode_rate" selected' in coding
    assert f'<td class="num">{sig(row["agent_decode_rate"])}</td>' in coding

    # the answer API: "coding, at least N tok/s, pass rate ≥ P, on this kind of machine"
    below = row["agent_decode_rate"] * 0.9
    question = {"work": "coding", "min_decode": f"{below:.3f}", "min_pass": "40", "hardware_class": hardware_class}
    answer = client.get(f"/api/v1/answer/?{urlencode(question)}").json()
    assert answer["nothing_meets"] is False
    [system] = answer["meets"]
    assert system["speed_basis"] == "agent"
    assert system["agent_decode_rate"] == row["agent_decode_rate"]
    assert system["time_to_solution_s"] == row["time_to_solution_s"]
    assert (system["pass_rate"], system["pass_interval"]) == (row["pass_rate"], row["pass_interval"])
    assert (system["correct"], system["scored"]) == (1, 2)
    page = client.get(f"/answer/?{urlencode(question)}").content.decode()
    assert pass_text(1, 2) in page
    assert f'<dd class="agent-decode">{row["agent_decode_rate"]:.1f} tok/s' in page

    # asking for more than the agent decoded, or a higher pass rate: nothing meets, and the miss says why
    too_fast = {**question, "min_decode": f"{row['agent_decode_rate'] * 2:.3f}"}
    missed = client.get(f"/api/v1/answer/?{urlencode(too_fast)}").json()
    assert missed["nothing_meets"] is True
    miss = missed["closest"][0]["misses"][0]["text"]
    assert miss.startswith(f"the agent decodes {row['agent_decode_rate']:.1f} tok/s"), miss
    assert "Nothing meets all of it" in client.get(f"/answer/?{urlencode(too_fast)}").content.decode()
    stricter = client.get(f"/api/v1/answer/?{urlencode({**question, 'min_pass': '60'})}").json()
    assert stricter["meets"] == [] and "passes 50% of tasks" in stricter["closest"][0]["misses"][0]["text"]
