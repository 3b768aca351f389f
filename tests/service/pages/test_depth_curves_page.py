"""`/depth-curves/<pack>/`: rate-vs-depth curves from the depth lane's boards (a real llama-server depth run)."""

import pytest

from registry_site.catalogue import transitions
from registry_site.catalogue.models import PublishedRun
from tests.service.lane_runs import DEPTH_RUN, approve_lane_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def depth_run(tmp_path, submit, operator):
    return PublishedRun.objects.get(submission=approve_lane_run(DEPTH_RUN, tmp_path, submit, operator))


def test_each_system_is_a_line_over_the_depths_with_links_to_each_depths_board(client, depth_run):
    html = client.get("/depth-curves/lanes-bench/").content.decode()
    # two charts, each drawn for a desktop and for a phone (issue 32 item 7)
    assert html.count("<svg") == 4 and html.count('class="bp-chart bp-fitted"') == 2
    assert "Prefill rate" in html and "Decode rate" in html
    assert html.count(">prefill, tok/s</text>") == 2 and html.count(">decode, tok/s</text>") == 2  # the y axis
    assert "case short" in html and depth_run.model in html
    for depth in (0, 512, 1024, 2048, 3072):
        assert f"/leaderboards/lanes-bench/short%20@depth={depth}/" in html
    board = client.get("/leaderboards/lanes-bench/short%20@depth=512/").content.decode()
    assert 'href="/depth-curves/lanes-bench/"' in board


def test_a_withdrawn_run_leaves_no_curve(client, depth_run):
    assert transitions.withdraw(depth_run.pk, depth_run.submission.submitter, "test")
    assert client.get("/depth-curves/lanes-bench/").status_code == 404


def test_a_pack_without_a_depth_lane_is_not_found(client, publish):
    publish()
    assert client.get("/depth-curves/smoke-chat/").status_code == 404
    assert client.get("/depth-curves/no-such-pack/").status_code == 404
    board = client.get("/leaderboards/smoke-chat/").content.decode()
    assert "/depth-curves/" not in board


def test_a_cached_depth_is_a_gap_in_the_prefill_curve_never_a_point(depth_run):
    from registry_site.catalogue.models import LeaderboardEntry
    from registry_site.catalogue.pages.depth_curves import curves_of

    LeaderboardEntry.objects.filter(case="short @depth=2048").update(cache_state="cached")
    (curve,) = curves_of("lanes-bench")[(depth_run.pack_version, "short")]
    assert curve.points["prefill_tps"][2048] is None and curve.points["prefill_tps"][512] is not None
    assert curve.points["decode_rate"][2048] is not None  # decode after a cached prefill is still decode
