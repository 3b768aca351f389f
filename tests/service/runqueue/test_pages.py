"""Run queue pages: who sees them, the form offers only allowlisted choices, live progress, cancel."""

from __future__ import annotations

import pytest

from submissions.runqueue import states
from submissions.runqueue.models import RunRequest


@pytest.fixture
def ops_client(client, operator):
    client.force_login(operator)
    return client


def test_the_hosts_page_shows_who_is_online_and_the_allowlists(ops_client, host):
    from django.utils import timezone

    host.heartbeat_at, host.worker_name = timezone.now(), "gpu-a@box"
    host.save()
    page = ops_client.get("/runner-hosts/").content.decode()
    assert "online" in page and "gpu-a@box" in page and "runs.gpu-a" in page
    assert "scripted-demo" in page and "smoke-chat 0.1.0" in page


def test_strangers_see_no_run_queue_and_owners_see_only_their_hosts(client, host, make_host, make_user, submitter):
    make_host("gpu-b", owner=make_user("b@example.org"))
    client.force_login(submitter)
    assert client.get("/runner-hosts/").status_code == 404
    assert client.get("/run-requests/").status_code == 404
    client.force_login(host.owner)
    page = client.get("/runner-hosts/").content.decode()
    assert "gpu-a" in page and "gpu-b" not in page
    assert client.get("/run-requests/new/?host=gpu-b").status_code == 200  # the host picker: gpu-b is not offered
    assert "gpu-b" not in client.get("/run-requests/new/?host=gpu-b").content.decode()


def test_the_form_offers_only_allowlisted_choices_and_queues_the_request(ops_client, host):
    page = ops_client.get("/run-requests/new/?host=gpu-a").content.decode()
    assert 'value="ref|scripted-demo"' in page and 'value="smoke-chat|0.1.0"' in page
    assert "http" not in page.split('<form method="post" class="run-request">')[1].split("</form>")[0]  # no URL field
    response = ops_client.post("/run-requests/new/?host=gpu-a", {
        "target": "ref|scripted-demo", "pack": "smoke-chat|0.1.0", "openai_stream_usage": "include",
        "repetitions": "2", "time_limit_minutes": "5"})
    request = RunRequest.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/run-requests/{request.pk}/"
    assert (request.repetitions, request.time_limit_s) == (2, 300)


def test_a_forged_choice_is_refused_with_the_form_shown_again(ops_client, host):
    response = ops_client.post("/run-requests/new/?host=gpu-a", {
        "target": "http://169.254.169.254/|scripted-demo", "pack": "smoke-chat|0.1.0",
        "openai_stream_usage": "include", "time_limit_minutes": "5"})
    assert response.status_code == 400 and "Select a valid choice" in response.content.decode()
    assert not RunRequest.objects.exists()


def test_the_request_page_shows_progress_rows_and_the_log_and_polls_without_inline_script(ops_client, host, queue):
    request = queue(host, pack="runtime-sweep")
    RunRequest.objects.filter(pk=request.pk).update(state=states.RUNNING, progress_done=3, progress_total=12,
                                                    current="short rep 2/3", log_tail="[3/12] short rep 1/3 ok 0.1s")
    page = ops_client.get(f"/run-requests/{request.pk}/").content.decode()
    assert 'max="12" value="3"' in page and "short rep 2/3" in page and "[3/12] short rep 1/3 ok" in page
    assert "<script>" not in page and "benchpack/run-live.js" in page
    live = ops_client.get(f"/run-requests/{request.pk}/live/").content.decode()
    assert "3/12 executions" in live and "data-settled" not in live


def test_cancel_from_the_page(ops_client, host, queue):
    request = queue(host)
    response = ops_client.post(f"/run-requests/{request.pk}/cancel/", follow=True)
    assert "Cancelled before it started." in response.content.decode()
    assert RunRequest.objects.get(pk=request.pk).state == states.CANCELLED
