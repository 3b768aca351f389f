"""The packs shipped in benchpacks/: they load, and their scoring accepts the
answers they ask for and rejects near misses."""

from __future__ import annotations

import json

import pytest

from benchpack.packs.loader import bundled_packs_dir, load_pack
from benchpack.run.scoring import check_runnable, score

BUNDLED = {
    "smoke-chat": "0.1.0",
    "runtime-sweep": "1.1.0",
    "desktop-django-wrap": "1.0.0",
    "tool-json": "0.1.0",
    "coding-agent-load": "1.0.0",
}


@pytest.mark.parametrize("pack_id, version", sorted(BUNDLED.items()))
def test_it_loads_every_bundled_pack_and_can_run_it(pack_id, version):
    pack = load_pack(bundled_packs_dir() / pack_id)
    assert (pack.id, pack.version) == (pack_id, version)
    assert pack.description
    check_runnable(pack)
    readme = (pack.root / "README.md").read_text()
    assert "## What it measures" in readme and "## What it does not measure" in readme


def test_it_ships_exactly_the_documented_packs():
    shipped = {p.parent.name for p in bundled_packs_dir().glob("*/benchpack.toml")}
    assert BUNDLED.keys() <= shipped


def test_smoke_chat_is_one_non_streaming_contains_case():
    pack = load_pack(bundled_packs_dir() / "smoke-chat")
    (case,) = pack.cases
    assert case.id == "capital"
    assert (pack.defaults.stream, pack.defaults.max_tokens, pack.defaults.temperature) == (False, 64, 0.0)
    assert score(case.scoring, "The capital of France is Paris.") == {"mode": "contains", "passed": True}
    assert score(case.scoring, "I don't know.")["passed"] is False


def test_runtime_sweep_grows_the_prompt_and_records_no_score():
    pack = load_pack(bundled_packs_dir() / "runtime-sweep")
    assert [c.id for c in pack.cases] == ["short", "medium", "long"]
    lengths = [len(c.prompt) for c in pack.cases]
    assert lengths == sorted(lengths) and lengths[2] > 8 * lengths[0]
    assert (pack.defaults.stream, pack.defaults.warmup, pack.defaults.repetitions) == (True, 1, 3)
    assert all(score(c.scoring, "anything") is None for c in pack.cases)


def test_runtime_sweep_and_coding_agent_load_declare_their_lanes():
    sweep = load_pack(bundled_packs_dir() / "runtime-sweep").lanes
    assert sweep.depth.depths == (0, 1024, 2048, 4096, 8192, 16384, 32768) and sweep.depth.cases == ("short",)
    assert sweep.concurrency.levels == (1, 2, 4, 8) and sweep.slo.ttft_s == 2.0 and sweep.slo.tpot_s == 0.1
    agent = load_pack(bundled_packs_dir() / "coding-agent-load")
    assert [c.id for c in agent.cases] == ["fix-prerelease-order", "fix-split-bill", "roman-numerals"]
    # The coding packs' own prompts, byte for byte.
    source = (bundled_packs_dir() / "python-regression-fix" / "prompts" / "fix-prerelease-order.md").read_text()
    assert agent.cases[0].prompt.strip() == source.strip()
    assert agent.lanes.depth.depths[-1] == 32768 and agent.lanes.concurrency.levels == (1, 2, 4)


GOOD_PLAN = """DDS_WRAP_PLAN
Inspect: settings.py and urls.py.
Electron shell: spawn Django, poll until ready, open a window.
Django runtime: waitress on 127.0.0.1 with a free port; SQLite in the user data dir.
Packaging: bundle a Python runtime with electron-builder.
Verification: launch the packaged app and load the dashboard."""


@pytest.mark.parametrize(
    "answer, passed",
    [
        (GOOD_PLAN, True),
        ("\n  " + GOOD_PLAN, True),
        ("Here is the plan:\n" + GOOD_PLAN, False),  # the marker must come first
        (GOOD_PLAN.replace("Packaging:", "Bundling:"), False),
        (GOOD_PLAN.replace("Inspect:", "XX").replace("Verification:", "Verification: x\nInspect:"), False),
        ("DDS_WRAP_PLANNER\n" + GOOD_PLAN.split("\n", 1)[1], False),
    ],
)
def test_desktop_django_wrap_scores_the_ordered_skeleton(answer, passed):
    pack = load_pack(bundled_packs_dir() / "desktop-django-wrap")
    for case in pack.cases:
        assert score(case.scoring, answer) == {"mode": "regex", "passed": passed}


def test_desktop_django_wrap_appends_the_context_but_not_the_repo():
    pack = load_pack(bundled_packs_dir() / "desktop-django-wrap")
    assert [c.id for c in pack.cases] == ["wrap-plan-small", "wrap-plan-context"]
    assert pack.fixture("synthetic-django-repo").is_dir
    assert pack.fixture("synthetic-django-repo").kind == "repo"
    settings = (pack.fixture("synthetic-django-repo").resolved / "config" / "settings.py").read_text()
    for case in pack.cases:
        assert case.fixture_refs == ("synthetic-django-app", "synthetic-django-repo")
        assert "--- BEGIN FIXTURE synthetic-django-app (context, fixtures/synthetic-django-app.md) ---\n" in case.prompt
        assert case.prompt.endswith("--- END FIXTURE synthetic-django-app ---")
        assert "synthetic-django-repo" not in case.prompt and settings not in case.prompt
        assert pack.repo_fixture(case) is None


WEATHER = {"name": "get_weather", "arguments": {"city": "Oslo", "unit": "celsius", "days": 3}}
TICKET = {
    "name": "create_ticket",
    "arguments": {"title": "Checkout shows a blank page", "priority": "urgent", "labels": ["bug", "frontend"],
                  "notify_oncall": True},
}


def with_args(call: dict, **changes) -> dict:
    return {**call, "arguments": {**call["arguments"], **changes}}


@pytest.mark.parametrize(
    "case_id, answer, passed",
    [
        ("weather-lookup", WEATHER, True),
        ("weather-lookup", with_args(WEATHER, days=3.5), False),
        ("weather-lookup", with_args(WEATHER, unit="fahrenheit"), False),
        ("weather-lookup", {**WEATHER, "name": "convert_currency"}, False),
        ("weather-lookup", {**WEATHER, "reason": "asked"}, False),
        ("create-ticket", TICKET, True),
        ("create-ticket", with_args(TICKET, notify_oncall=1), False),
        ("create-ticket", with_args(TICKET, priority="low"), False),
        ("create-ticket", with_args(TICKET, labels=["frontend"]), False),
        ("create-ticket", with_args(TICKET, labels=["bug", "bug"]), False),
        ("create-ticket", with_args(TICKET, title="Bug"), False),
        ("create-ticket", with_args(TICKET, extra=True), False),
    ],
)
def test_tool_json_schemas_accept_the_call_and_reject_near_misses(case_id, answer, passed):
    pack = load_pack(bundled_packs_dir() / "tool-json")
    case = next(c for c in pack.cases if c.id == case_id)
    result = score(case.scoring, json.dumps(answer))
    assert result["mode"] == "json-schema" and result["passed"] is passed


def test_tool_json_fails_fenced_output():
    pack = load_pack(bundled_packs_dir() / "tool-json")
    fenced = "```json\n" + json.dumps(WEATHER) + "\n```"
    assert score(pack.cases[0].scoring, fenced)["passed"] is False
