"""A repo-task answer the verifier's screen calls `suspicious` (issue 31 item 3): published as failed and counted
apart — on the run page in words, in the API's run detail as a field — and its offending lines on the review page."""

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
