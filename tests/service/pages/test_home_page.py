"""`/`: the newest public runs and the way into the leaderboards; demo runs labelled, hidden runs absent."""

import pytest

pytestmark = pytest.mark.django_db


def test_home_lists_public_runs_and_links_the_boards(client, publish):
    run = publish("2026-04-29-llama-server-runtime")
    html = client.get("/").content.decode()
    assert f"/runs/{run.pk}/" in html and "/leaderboards/runtime-sweep/" in html and 'href="/leaderboards/"' in html


def test_demo_runs_are_labelled(client, publish):
    from submissions.models import Submission

    run = publish("2026-04-29-llama-server-runtime")
    Submission.objects.filter(pk=run.submission_id).update(is_demo=True)
    type(run).objects.filter(pk=run.pk).update(is_demo=True)
    assert "demo data" in client.get("/").content.decode()


def test_hidden_runs_are_not_listed(client, hidden_runs):
    html = client.get("/").content.decode()
    assert "mlx-community" not in html
    for run in (hidden_runs["withdrawn"], hidden_runs["unpublished"]):
        assert f"/runs/{run.pk}/" not in html
