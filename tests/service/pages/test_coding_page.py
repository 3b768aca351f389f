"""`/leaderboards/coding/`: repo-task pass rate against speed, one point per system, Pareto front marked."""

import re
import xml.etree.ElementTree as ET

import pytest

from registry_site.catalogue.pages.leaderboards import coding_pack_ids

pytestmark = pytest.mark.django_db
NS = {"s": "http://www.w3.org/2000/svg"}
CODING = ("python-regression-fix", "1.0.0", "fix-prerelease-order")
BASE = "2026-04-30-llama-server-desktop-django-wrap"


def chart_of(html):
    return ET.fromstring(re.search(r"<svg\b.*?</svg>", html, flags=re.S).group(0))


@pytest.fixture
def systems(publish, variant):
    """Three systems: fast and half right, slow and always right, slow and half right (dominated)."""
    return {
        "fast": publish(variant(BASE, "fast", speed=2.0, runtime=("llama.cpp", "fast"), repo_task=CODING, passed=[True, False])),
        "right": publish(variant(BASE, "right", speed=1.0, runtime=("llama.cpp", "right"), repo_task=CODING, passed=[True, True])),
        "worse": publish(variant(BASE, "worse", speed=0.9, runtime=("llama.cpp", "worse"), repo_task=CODING, passed=[False, True])),
    }


def test_the_bundled_coding_packs_are_the_ones_with_repo_tasks():
    assert "python-regression-fix" in coding_pack_ids() and "smoke-chat" not in coding_pack_ids()


def test_each_system_is_a_point_and_the_dominated_one_is_off_the_front(client, systems):
    html = client.get("/leaderboards/coding/?pack=python-regression-fix").content.decode()
    chart = chart_of(html)
    tips = [g.find("s:title", NS).text for g in chart.findall(".//s:g", NS)]
    assert len(tips) == 3
    on_front = sorted(t.split(" · ")[1].split("\n")[0] for t in tips if "Pareto front" in t)
    assert on_front == ["llama.cpp fast", "llama.cpp right"]
    assert chart.find(".//s:path[@class='bp-front']", NS) is not None
    assert html.count("on the front</td>") == 2


def test_wall_time_as_speed_and_bad_parameters(client, systems):
    assert client.get("/leaderboards/coding/?pack=python-regression-fix&speed=wall_s").status_code == 200
    bad = client.get("/leaderboards/coding/?speed=vibes")
    assert bad.status_code == 400 and "<code>speed</code>" in bad.content.decode()
    assert client.get("/leaderboards/coding/?pack=smoke-chat").status_code == 400


def test_hardware_filter_and_hidden_runs(client, systems, operator):
    from registry_site.catalogue import transitions

    assert transitions.unpublish(systems["right"].pk, operator, "verifier bug")
    html = client.get("/leaderboards/coding/?pack=python-regression-fix").content.decode()
    assert "llama.cpp right" not in html and len(chart_of(html).findall(".//s:g", NS)) == 2
    html = client.get("/leaderboards/coding/?pack=python-regression-fix&hardware_class=none-such").content.decode()
    assert "No scored system matches" in html or "No approved coding" in html


def drawings(html: str) -> dict[str, str]:
    """The page's two drawings of its one chart (registry_site/catalogue/pages/fitted_charts.py), by container."""
    found = re.findall(r'<div class="(chart-wide|chart-phone)">(<svg\b.*?</svg>)</div>', html, flags=re.S)
    assert [where for where, _ in found] == ["chart-wide", "chart-phone"], [where for where, _ in found]
    return dict(found)


def test_the_chart_is_drawn_at_640_and_at_a_phones_width_and_every_text_fits_each(client, systems):
    """Issue 32 item 7: the scatter is drawn twice, each laid out for the width it is shown at."""
    from benchpack.reporting.charts import PHONE_WIDTH
    from tests.reporting.test_line_chart_fits import assert_fits

    svgs = drawings(client.get("/leaderboards/coding/?pack=python-regression-fix").content.decode())
    wide, phone = assert_fits(svgs["chart-wide"]), assert_fits(svgs["chart-phone"])
    assert (wide.get("width"), phone.get("width")) == ("640", str(PHONE_WIDTH))
    assert "bp-fitted" in phone.get("class") and "bp-fitted" not in wide.get("class")
    assert len(phone.findall(".//s:g", NS)) == len(wide.findall(".//s:g", NS)) == 3  # every system in both
