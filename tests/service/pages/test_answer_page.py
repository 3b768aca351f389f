"""`/answer/` and `/api/v1/answer/`: the systems meeting a question, ranked with evidence, or plainly none
and the closest. Systems are real result directories with scaled timings (tests.service.variants), published
through the real validate → approve path."""

import pytest

pytestmark = pytest.mark.django_db
CODING = ("python-regression-fix", "1.0.0", "fix-prerelease-order")
BASE = "2026-04-30-llama-server-desktop-django-wrap"
SWEEP = "2026-04-29-llama-server-runtime"  # runtime-sweep: no pass/fail scoring


@pytest.fixture
def systems(publish, variant):
    """Coding: fast and half right (64 GB), slow and always right (128 GB), slow and half right."""
    return {
        "fast": publish(variant(BASE, "fast", speed=2.0, runtime=("llama.cpp", "fast"), repo_task=CODING,
                                passed=[True, False])),
        "right": publish(variant(BASE, "right", speed=1.0, runtime=("llama.cpp", "right"), repo_task=CODING,
                                 passed=[True, True], ram_mb=131072)),
        "worse": publish(variant(BASE, "worse", speed=0.9, runtime=("llama.cpp", "worse"), repo_task=CODING,
                                 passed=[False, True])),
        "sweep": publish(variant(SWEEP, "sweep", speed=1.0, runtime=("llama.cpp", "sweep"))),
    }


def api(client, **params):
    return client.get("/api/v1/answer/", params)


def test_it_ranks_the_systems_that_meet_every_condition_with_their_evidence(client, systems):
    fast = systems["fast"].cases.first().decode_rate
    body = api(client, work="coding", min_pass="50").json()
    assert body["nothing_meets"] is False and body["packs"] == ["python-regression-fix"]
    # pass rate first (1.0 before the two at 0.5), then decode
    assert [s["runtime_version"] for s in body["meets"]] == ["right", "fast", "worse"]
    first = body["meets"][0]
    assert first["pass_rate"] == 1.0 and first["run_count"] == 1 and first["reproduced"] is False
    assert first["decode_rate_min"] <= first["decode_rate"] <= first["decode_rate_max"]
    body = api(client, work="coding", min_pass="50", min_decode=str(fast * 0.9)).json()
    assert [s["runtime_version"] for s in body["meets"]] == ["fast"]
    html = client.get("/answer/", {"work": "coding", "min_pass": "50", "min_decode": str(fast * 0.9)}).content.decode()
    assert "1 system meets all of it" in html and "llama.cpp fast" in html and "llama.cpp right" not in html
    assert "not reproduced yet" in html and "None" not in html and "True" not in html
    assert first["plausibility"] in ("plausible", "implausible", "unchecked") and sum(first["plausibility_runs"].values()) == 1
    assert "plausibility" in html


def test_nothing_meets_says_so_and_shows_the_closest_with_what_they_missed(client, systems):
    fast = systems["fast"].cases.first().decode_rate
    params = {"work": "coding", "min_pass": "100", "min_decode": str(fast * 1.5)}
    body = api(client, **params).json()
    assert body["nothing_meets"] is True and body["meets"] == []
    assert [s["runtime_version"] for s in body["closest"]][0] in ("right", "fast")
    assert all(s["misses"] for s in body["closest"])
    html = client.get("/answer/", params).content.decode()
    assert "Nothing meets all of it" in html and "came closest" in html and "below" in html


def test_hardware_class_and_memory_budget_filter(client, systems):
    right = systems["right"].hardware_class
    body = api(client, work="coding", hardware_class=right).json()
    assert [s["runtime_version"] for s in body["meets"]] == ["right"]
    budget = body["meets"][0]["memory_gb"]
    body = api(client, work="coding", max_memory_gb=str(budget - 1)).json()
    assert "right" not in [s["runtime_version"] for s in body["meets"]] and body["meets"]


def test_a_pack_without_scoring_cannot_meet_a_pass_rate(client, systems):
    body = api(client, work="runtime-sweep", min_pass="10").json()
    assert body["nothing_meets"] is True and body["closest"][0]["misses"][0]["text"] == "not scored pass/fail"
    assert api(client, work="runtime-sweep").json()["total_meeting"] == 1


@pytest.mark.parametrize("params, param", [
    ({}, "work"), ({"work": "no-such-pack"}, "work"), ({"work": "coding", "min_decode": "fast"}, "min_decode"),
    ({"work": "coding", "min_pass": "150"}, "min_pass"), ({"work": "coding", "max_ttft": "-1"}, "max_ttft"),
])
def test_bad_questions_are_one_clear_400(client, systems, params, param):
    response = api(client, **params)
    assert response.status_code == 400 and param in response.json()["fields"]
    if params:
        page = client.get("/answer/", params)
        assert page.status_code == 400 and f"<code>{param}</code>" in page.content.decode()


def test_unknown_parameters_are_refused_and_the_empty_form_renders(client, systems):
    assert api(client, work="coding", pass_rate="5").status_code == 400
    html = client.get("/answer/").content.decode()
    assert 'name="min_decode"' in html and "Coding (every coding pack)" in html


def test_work_is_offered_by_kind_and_title_not_by_pack_id_alone(client, systems):
    """Issue 32 item 5: the work list named packs by id only."""
    html = client.get("/answer/").content.decode()
    assert '<option value="runtime-sweep">Chat speed · Short, medium and long prompts (runtime-sweep)</option>' in html
    assert ('<option value="python-regression-fix">Coding: fix a bug from a report · Prerelease versions sort '
            'wrongly (python-regression-fix)</option>') in html
    answered = client.get("/answer/", {"work": "runtime-sweep"}).content.decode()
    assert ">Chat speed · Short, medium and long prompts</a>" in answered  # each row's pack, in words


def test_the_hardware_list_names_each_class_once_in_words(client, systems):
    """Issue 32 item 5: the form's list repeated each class once per row (DISTINCT over the default
    ordering) and showed only the slug."""
    from registry_site.catalogue.templatetags.catalogue import hardware_words

    page = client.get("/answer/").content.decode()
    classes = {run.hardware_class for run in systems.values()}
    for hardware_class in classes:
        assert page.count(f'<option value="{hardware_class}"') == 1, hardware_class
        assert f">{hardware_words(hardware_class)}</option>" in page
    assert hardware_words("intel-core-ultra-7-155h+no-gpu+16gb") == "Intel Core Ultra 7 155H · no GPU · 16 GB"
    assert hardware_words("apple-m4-pro-64gb") == "Apple M4 Pro · 64 GB"
