"""A repo-task answer the verifier's screen calls `suspicious` (issue 31 item 3): published as failed and counted
apart — on the run page in words, in the API's run detail as a field — and its offending lines on the review page."""

import io

import pytest
from django.urls import reverse

pytestmark = pytest.mark.django_db
CODING = ("python-regression-fix", "1.0.0", "fix-prerelease-order")
BASE = "2026-04-30-llama-server-desktop-django-wrap"
LINES = ["src/semver.py:12: frames: sys._getframe(2).f_locals", "src/semver.py:14: flags: sys.flags.isolated"]


@pytest.fixture
def suspicious_bundle(variant):
    """Two answers of one case: the first wrong, the second suspicious (its verdict also failed)."""
    return variant(BASE, "sly", repo_task=CODING, passed=[False, False], suspicious={1: LINES})


def test_the_run_page_and_api_count_suspicious_answers_apart_and_score_them_failed(client, publish, suspicious_bundle):
    run = publish(suspicious_bundle)
    case = run.cases.get()
    assert (case.suspicious_rows, case.passed_rows, case.scored_rows) == (1, 0, 2)  # failed, and counted apart
    html = client.get(f"/runs/{run.pk}/").content.decode()
    assert "1 answer introspected the verifier" in html and "scored as failed, counted apart" in html
    assert "1 suspicious</small>" in html
    for line in LINES:  # the lines are the operator's to judge, not the public page's
        assert line not in html
    body = client.get(f"/api/v1/runs/{run.pk}/").json()
    assert body["suspicious_answers"] == 1 and body["cases"][0]["suspicious_rows"] == 1


def test_a_run_without_suspicious_answers_says_nothing_of_them(client, publish, variant):
    run = publish(variant(BASE, "honest", repo_task=CODING, passed=[True, False]))
    assert "introspected" not in client.get(f"/runs/{run.pk}/").content.decode()
    assert client.get(f"/api/v1/runs/{run.pk}/").json()["suspicious_answers"] == 0


def test_the_review_page_shows_each_suspicious_answer_with_its_lines(client, publish, operator, suspicious_bundle):
    submission = publish(suspicious_bundle, approved=False)
    client.force_login(operator)
    html = client.get(reverse("submissions:review_detail", args=[submission.pk])).content.decode()
    assert 'id="suspicious"' in html and "1 answer introspected the verifier" in html
    assert "fix-prerelease-order" in html
    for line in LINES:
        assert f"<code>{line}</code>" in html


def _csv_rows(text: str) -> list[dict]:
    import csv
    import io

    return list(csv.DictReader(io.StringIO(text)))


def test_every_surface_that_shows_a_rows_pass_rate_counts_its_suspicious_answers_apart(client, publish, variant):
    """Two runs of one system on a coding pack: one with a passed and a suspicious answer, one with a passed and
    a wrong one. Pooled: 2 of 4 passed, 1 of the 2 failures suspicious. The boards (pack and case, page, API and
    CSV), the coding view, the system page and API, the model page and the answer (page and API) all say 1
    suspicious beside the same 2 of 4, and the run API's counts add up to it."""
    from benchpack.results.metrics import pass_text
    from registry_site.catalogue.pages.board_rows import SUSPICIOUS_TITLE

    runs = [publish(variant(BASE, "sly-a", repo_task=CODING, passed=[True, False], suspicious={1: LINES})),
            publish(variant(BASE, "honest-b", repo_task=CODING, passed=[True, False]))]
    assert len({run.system_key for run in runs}) == 1
    assert sum(client.get(f"/api/v1/runs/{run.pk}/").json()["suspicious_answers"] for run in runs) == 1
    pack, case = CODING[0], CODING[2]
    cell = f'<td class="num">2/4<br><span class="suspicious" title="{SUSPICIOUS_TITLE}">1 suspicious</span></td>'
    words = pass_text(2, 4, 1)
    assert words.startswith("50 % (2 of 4 tasks; 95 % interval ") and words.endswith(
        " · 1 suspicious: introspected the verifier, scored as failed")

    for api_url, page_url in ((f"/api/v1/leaderboards/{pack}/", f"/leaderboards/{pack}/"),
                              (f"/api/v1/leaderboards/{pack}/{case}/", f"/leaderboards/{pack}/{case}/")):
        [row] = client.get(api_url).json()["results"]
        assert (row["correct"], row["scored"], row["suspicious_answers"]) == (2, 4, 1)
        assert row["pass_rate"] == 0.5  # a suspicious answer is a failed task, never a passed one
        [csv_row] = _csv_rows(client.get(api_url, {"format": "csv"}).content.decode())
        assert (csv_row["correct"], csv_row["scored"], csv_row["suspicious_answers"]) == ("2", "4", "1")
        board = client.get(page_url).content.decode()
        assert cell in board and "suspicious-note" in board

    coding = client.get("/leaderboards/coding/", {"pack": pack}).content.decode()
    assert cell in coding and "suspicious-note" in coding and "correct over 2 run(s)" in coding
    system = runs[0].system_key
    assert words in client.get(f"/systems/{system}/").content.decode()
    [entry] = client.get(f"/api/v1/systems/{system}/").json()["entries"]
    assert (entry["correct"], entry["scored"], entry["suspicious_answers"]) == (2, 4, 1)
    assert cell in client.get(f"/models/{runs[0].model}/").content.decode()

    answer = client.get("/api/v1/answer/", {"work": pack, "min_pass": "40"}).json()
    [meets] = answer["meets"]
    assert (meets["correct"], meets["scored"], meets["suspicious_answers"]) == (2, 4, 1)
    assert words in client.get("/answer/", {"work": pack, "min_pass": "40"}).content.decode()
    stricter = client.get("/api/v1/answer/", {"work": pack, "min_pass": "60"}).json()
    [miss] = stricter["closest"][0]["misses"]
    assert miss["text"] == "passes 50% of tasks (1 of the failures suspicious), below 60%"


def test_a_board_without_suspicious_answers_says_nothing_of_them(client, publish, variant):
    publish(variant(BASE, "honest", repo_task=CODING, passed=[True, False]))
    [row] = client.get(f"/api/v1/leaderboards/{CODING[0]}/").json()["results"]
    assert row["suspicious_answers"] == 0
    board = client.get(f"/leaderboards/{CODING[0]}/").content.decode()
    assert '<td class="num">1/2</td>' in board and "suspicious" not in board


def _forget_suspicious_counts():
    """A run published before migration 0011: its cases read 0, and so do its leaderboard rows."""
    from django.core.management import call_command

    from registry_site.catalogue.models import LeaderboardEntry, PublishedCase

    PublishedCase.objects.update(suspicious_rows=0)
    call_command("rebuild_leaderboards", stdout=open("/dev/null", "w"))
    assert set(LeaderboardEntry.objects.values_list("suspicious_answers", flat=True)) == {0}


def _counts(run):
    from registry_site.catalogue.models import LeaderboardEntry

    return (run.cases.get().suspicious_rows,
            sorted(LeaderboardEntry.objects.values_list("case", "suspicious_answers", "correct", "scored")))


@pytest.mark.django_db(transaction=True)
def test_the_migration_recounts_suspicious_answers_of_runs_published_before_0011(client, publish, suspicious_bundle):
    from django.core.management import call_command

    run = publish(suspicious_bundle)
    published = _counts(run)
    assert published == (1, [("", 1, 0, 2), (CODING[2], 1, 0, 2)])
    _forget_suspicious_counts()
    call_command("migrate", "registry_site", "0011", verbosity=0)
    call_command("migrate", "registry_site", verbosity=0)
    assert _counts(run) == published  # from the stored rows, exactly as publishing counted
    assert client.get(f"/api/v1/leaderboards/{CODING[0]}/").json()["results"][0]["suspicious_answers"] == 1


def test_the_rebuild_command_recounts_suspicious_answers_from_the_stored_rows(publish, suspicious_bundle, variant):
    from django.core.management import call_command

    run = publish(suspicious_bundle)
    honest = publish(variant(BASE, "honest", repo_task=CODING, passed=[True, False], runtime=("llama.cpp", "b200")))
    published = _counts(run)
    assert ("", 0, 1, 2) in published[1] and ("", 1, 0, 2) in published[1]
    _forget_suspicious_counts()
    honest.cases.update(suspicious_rows=5)  # a count its rows do not hold is put right too
    out = io.StringIO()
    call_command("rebuild_leaderboards", "--suspicious", stdout=out)
    assert "suspicious answers recounted: 1 in 1 cases, 2 case rows changed" in out.getvalue()
    assert _counts(run)[0] == 1 and honest.cases.get().suspicious_rows == 0
    assert _counts(run) == published  # the honest system's rows: 0 again; the sly one's: 1
