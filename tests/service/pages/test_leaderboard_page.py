"""`/leaderboards/<pack>/[<case>/]`: one workload ranked by a chosen metric, filtered, sorted, paged."""

import re

import pytest

from registry_site.catalogue import transitions
from registry_site.catalogue.pages import leaderboards

pytestmark = pytest.mark.django_db
BASE = "2026-04-29-llama-server-runtime"
HIDDEN_MODEL = "mlx-community/Qwen2.5-0.5B-Instruct-4bit"


def ranked_runtimes(html: str) -> list[str]:
    """The runtime versions of the board's rows, top to bottom."""
    body = html.split("<tbody>")[1].split("</tbody>")[0]
    return re.findall(r'/runtimes/[^"]+/">[^<]+</a> <small>([^<]+)</small>', body)


def without_filter_form(html: str) -> str:
    return re.sub(r'<form method="get" class="filters".*?</form>', "", html, flags=re.S)


@pytest.fixture
def board(publish, variant):
    runs = {}
    for version, speed, ram in (("b100", 1.0, None), ("b200", 2.0, None), ("b300", 0.5, 32768)):
        runs[version] = publish(variant(BASE, f"llama-{version}", speed=speed, runtime=("llama.cpp", version), ram_mb=ram))
    return runs


def test_rows_rank_by_decode_speed_by_default_with_spread_runs_and_answered_columns(client, board):
    page = client.get("/leaderboards/runtime-sweep/short/")
    assert page.status_code == 200
    html = page.content.decode()
    assert ranked_runtimes(html) == ["b200", "b100", "b300"]
    assert "answered" in html and "3/3" in html  # three repetitions of the case, all answered
    assert "self-reported" in html  # provenance badge


def test_any_column_sorts_and_the_same_column_again_reverses(client, board):
    html = client.get("/leaderboards/runtime-sweep/short/?order=ttft_s").content.decode()
    assert ranked_runtimes(html) == ["b200", "b100", "b300"]  # lowest time first
    html = client.get("/leaderboards/runtime-sweep/short/?order=-ttft_s").content.decode()
    assert ranked_runtimes(html) == ["b300", "b100", "b200"]
    assert 'href="?order=-ttft_s"' in client.get("/leaderboards/runtime-sweep/short/?order=ttft_s").content.decode()


def test_filters_narrow_the_rows_and_stay_in_the_sort_links(client, board):
    html = client.get("/leaderboards/runtime-sweep/short/?runtime_version=b100").content.decode()
    assert ranked_runtimes(html) == ["b100"]
    assert "runtime_version=b100&amp;order=" in html or "runtime_version=b100&order=" in html
    html = client.get("/leaderboards/runtime-sweep/short/?hardware_class=apple-m5-max-32gb").content.decode()
    assert ranked_runtimes(html) == ["b300"]
    html = client.get("/leaderboards/runtime-sweep/short/?model=no-such-model").content.decode()
    assert ranked_runtimes(html) == [] and "No system matches" in html


def test_pages_hold_at_most_per_page_rows(client, board, monkeypatch):
    monkeypatch.setattr(leaderboards, "PER_PAGE", 2)
    first = client.get("/leaderboards/runtime-sweep/short/").content.decode()
    second = client.get("/leaderboards/runtime-sweep/short/?page=2").content.decode()
    assert ranked_runtimes(first) == ["b200", "b100"] and ranked_runtimes(second) == ["b300"]
    assert "Page 1 of 2" in first


def test_bad_parameters_get_a_400_page_naming_the_parameter(client, board):
    for query, param in (("order=speed", "order"), ("since=yesterday", "since"), ("provenance=trust-me", "provenance"),
                         ("workload=abc", "workload")):
        page = client.get(f"/leaderboards/runtime-sweep/short/?{query}")
        assert page.status_code == 400 and f"<code>{param}</code>" in page.content.decode()
    assert client.get("/leaderboards/no-such-pack/").status_code == 404


def test_a_flagged_row_shows_its_public_note(client, board, operator):
    assert transitions.flag(board["b100"].pk, operator, "timings look cached")
    html = client.get("/leaderboards/runtime-sweep/short/").content.decode()
    assert "timings look cached" in html and "flagged" in html


def test_nothing_hidden_appears_by_list_filter_or_page(client, board, hidden_runs):
    for url in ("/leaderboards/runtime-sweep/short/", "/leaderboards/runtime-sweep/",
                f"/leaderboards/runtime-sweep/short/?model={HIDDEN_MODEL}", "/leaderboards/runtime-sweep/short/?page=2",
                "/leaderboards/runtime-sweep/short/?provenance=independently-reproduced",
                "/leaderboards/runtime-sweep/short/?provenance=operator-curated", "/leaderboards/"):
        html = without_filter_form(client.get(url).content.decode())  # the form echoes what was asked for
        assert HIDDEN_MODEL not in html, url
        for run in (hidden_runs["withdrawn"], hidden_runs["unpublished"]):
            assert f'value="{run.pk}"' not in html and f"/runs/{run.pk}/" not in html


def test_demo_rows_are_labelled_and_leave_the_ranking_once_real_data_exists(client, publish, variant, board):
    from submissions.models import Submission

    demo = publish(variant(BASE, "demo-run", speed=10.0, runtime=("benchpack-refserver", "scripted")), approved=False)
    Submission.objects.filter(pk=demo.pk).update(is_demo=True)
    from tests.service.vouch import approve
    from django.contrib.auth import get_user_model

    assert approve(demo.pk, get_user_model().objects.get(email="ops@example.org"))
    html = client.get("/leaderboards/runtime-sweep/short/").content.decode()
    assert "scripted" not in ranked_runtimes(html) and "benchpack-refserver" not in html


def test_a_board_of_only_demo_rows_says_so_and_labels_each_row(client, publish, operator):
    from registry_site.catalogue.models import PublishedRun
    from submissions.models import Submission
    from tests.service.vouch import approve

    submission = publish("2026-04-29-llama-server-runtime", approved=False)
    Submission.objects.filter(pk=submission.pk).update(is_demo=True)
    assert approve(submission.pk, operator)
    assert PublishedRun.objects.get(submission=submission).is_demo
    html = client.get("/leaderboards/runtime-sweep/short/").content.decode()
    assert "Only demo data so far" in html and 'class="badge badge-demo">demo data</span>' in html


def test_the_badges_column_sorts_by_provenance(client, publish, variant):
    publish(variant(BASE, "self", runtime=("llama.cpp", "b100")))
    curated = variant(BASE, "curated", runtime=("llama.cpp", "b200"))
    from django.contrib.auth import get_user_model

    from tests.service.vouch import approve

    # Provenance is earned (issue 19): operator-curated is what an operator uploaded, whatever a bundle claims.
    ops = get_user_model().objects.get(email="ops@example.org")
    submission = publish(curated, approved=False, user=ops)
    assert approve(submission.pk, ops)
    html = client.get("/leaderboards/runtime-sweep/short/?order=provenance").content.decode()
    assert 'href="?order=-provenance"' in html
    assert ranked_runtimes(html) == ["b200", "b100"]  # operator-curated before self-reported


def test_the_rank_by_select_offers_the_metrics_and_keeps_a_header_sort(client, board):
    html = client.get("/leaderboards/runtime-sweep/short/?order=-wall_s").content.decode()
    assert '<option value="ttft_s">time to first token (lowest first)</option>' in html
    assert '<option value="-wall_s" selected>wall time (reversed)</option>' in html
    assert ranked_runtimes(client.get("/leaderboards/runtime-sweep/short/?order=wall_s").content.decode()) == [
        "b200", "b100", "b300"]
