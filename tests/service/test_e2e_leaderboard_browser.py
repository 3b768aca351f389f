"""A visitor's walk through the public catalogue in a real browser, against granian + a Celery worker:

leaderboard → filter → pick two systems → compare → run page, at desktop
width and at 390 px (a phone: the page never scrolls sideways; wide tables
scroll in their own box).

The runs get there the way a submitter's do: bundles uploaded over HTTP
with an API token (`benchpack submit`), validated by the worker, approved
by an operator (`submissions.review.approve`, what the review page's button
calls). One of them is then withdrawn and must vanish from every page.
"""

from __future__ import annotations

import re

import pytest

from tests.service.live import start_live_service
from tests.service.test_e2e_browser import browser  # noqa: F401 - the shared Chromium fixture
from tests.service.variants import make_variant

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
BASE = "2026-04-29-llama-server-runtime"
PHONE = {"width": 390, "height": 844}

SETUP = """
from accounts.models import ApiToken
from accounts.operators import make_operator
from allauth.account.models import EmailAddress
from django.contrib.auth import get_user_model
User = get_user_model()
ops = User.objects.create_user(username="ops@example.org", email="ops@example.org", password="ops-password-123")
make_operator(ops)
sub = User.objects.create_user(username="sub@example.org", email="sub@example.org", password="sub-password-123")
for u in (ops, sub):
    EmailAddress.objects.create(user=u, email=u.email, verified=True, primary=True)
print("TOKEN", ApiToken.issue(sub, "browser test")[1])
"""

APPROVE = """
from django.contrib.auth import get_user_model
from tests.service.vouch import approve
from registry_site.catalogue.models import PublishedRun
ops = get_user_model().objects.get(email="ops@example.org")
for pk in {ids!r}:
    assert approve(pk, ops), pk
    print("RUN", pk, PublishedRun.objects.get(submission_id=pk).pk)
"""

WITHDRAW = """
from django.contrib.auth import get_user_model
from registry_site.catalogue import transitions
assert transitions.withdraw({run}, get_user_model().objects.get(email="sub@example.org"), "wrong build recorded")
"""


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    service, stop = start_live_service(tmp_path_factory.mktemp("live-boards"))
    yield service
    stop()


def _publish(live, tmp_path, versions: dict[str, tuple[float, int | None]]) -> dict[str, int]:
    """Upload one variant per runtime version over HTTP, let the worker validate, approve; -> version: run id."""
    from benchpack.bundles.create import create_bundle
    from benchpack.bundles.submit import submit_bundle

    token = re.search(r"TOKEN (\S+)", live.manage("shell", "-c", SETUP)).group(1)
    submissions = {}
    for version, (speed, ram) in versions.items():
        name = make_variant(tmp_path / "results", BASE, f"llama-{version}", speed=speed,
                            runtime=("llama.cpp", version), ram_mb=ram)
        bundle = create_bundle([tmp_path / "results" / name], tmp_path / f"bundle-{version}", "self-reported")
        result = submit_bundle(bundle, live.url, token, timeout_s=90)
        assert result.submission["state"] == "quarantined", result.submission
        submissions[version] = result.submission["id"]
    out = live.manage("shell", "-c", APPROVE.format(ids=list(submissions.values())))
    runs = {submission: int(run) for submission, run in re.findall(r"RUN (\S+) (\d+)", out)}
    return {version: runs[str(submission)] for version, submission in submissions.items()}


def _no_sideways_scroll(page) -> None:
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1"), page.url


def _ranked_versions(page) -> list[str]:
    return [cell.inner_text().split()[-1] for cell in page.query_selector_all("table.leaderboard tbody tr td:nth-child(4)")]


def test_leaderboard_filter_compare_run_page(live, browser, tmp_path):  # noqa: F811
    runs = _publish(live, tmp_path, {"b100": (1.0, None), "b200": (2.0, None), "b300": (0.5, 32768)})

    page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    page.goto(live.url + "/")
    page.click("text=Leaderboards")
    page.click("a[href='/leaderboards/runtime-sweep/short/']")
    page.wait_for_selector("table.leaderboard")
    assert _ranked_versions(page) == ["b200", "b100", "b300"]  # decode speed, best first

    # sort by TTFT (lowest first) with its header link, then filter by hardware class
    page.click("table.leaderboard th a:text('TTFT')")
    page.wait_for_url(re.compile(r"order=ttft_s"))
    assert _ranked_versions(page) == ["b200", "b100", "b300"]
    if page.locator("details.filters-fold").get_attribute("open") is None:
        page.click("details.filters-fold summary")  # the filters fold away until asked for
    page.select_option("select[name=hardware_class]", "apple-m5-max-64gb")
    page.click("form.filters button[type=submit]")
    page.wait_for_url(re.compile(r"hardware_class=apple-m5-max-64gb"))
    assert _ranked_versions(page) == ["b200", "b100"]
    assert "order=ttft_s" in page.url  # the sort survives the filter: the URL is the whole view

    # pick both rows and compare them
    for box in page.query_selector_all("input[name=runs]"):
        box.check()
    page.click("#compare-form button[type=submit]")
    page.wait_for_url(re.compile(r"/compare/\?runs="))
    page.wait_for_selector("section.compare-case")
    assert page.locator("section.compare-case").count() == 3  # the runs' cases: short, medium, long
    assert "Not comparable" not in page.content()
    assert "×2.00" in page.content() or "×0.50" in page.content()

    # on to the run page of the first compared run
    page.click("table.compare-runs tr:nth-child(2) td a")
    page.wait_for_url(re.compile(r"/runs/\d+/$"))
    html = page.content()
    assert "Apple M5 Max" in html and "atlas.local" not in html and "25.4.0" not in html
    assert page.locator("a:text('CSV')").count() == 1 and page.locator("a:text('JSONL')").count() == 1

    # the same walk at phone width: nothing scrolls sideways
    phone = browser.new_context(viewport=PHONE).new_page()
    for url in ("/leaderboards/runtime-sweep/short/", f"/compare/?runs={runs['b100']},{runs['b200']}",
                f"/runs/{runs['b100']}/", "/leaderboards/", "/accounts/login/", "/leaderboards/coding/",
                "/models/qwen2.5-0.5b-instruct-q4_k_m/", "/runtimes/llama.cpp/", "/hardware/apple-m5-max-64gb/", "/"):
        phone.goto(live.url + url)
        _no_sideways_scroll(phone)

    phone.goto(live.url + "/leaderboards/runtime-sweep/short/")
    phone.click("table.leaderboard a:text('timeline')")
    phone.wait_for_url(re.compile(r"/timelines/\?workload="))
    # drawn at 640 and at the phone's width; the phone shows its own
    assert phone.locator("svg.bp-xy").count() == 2 and phone.locator("svg.bp-xy.bp-fitted >> visible=true").count() == 1
    _no_sideways_scroll(phone)

    # the whole-pack board's per-case figures (issue 32 item 4) open under the model name, in view at 390 px
    phone.goto(live.url + "/leaderboards/runtime-sweep/")
    fold = phone.locator("table.leaderboard details.per-case").first
    fold.locator("summary").click()
    items = fold.locator("li")
    assert items.count() == 3 and items.nth(0).is_visible()
    for i in range(3):
        box = items.nth(i).bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"], (i, box)
    assert re.fullmatch(r"long [\d.]+ s · [\d.—]+ tok/s", items.nth(0).inner_text()), items.nth(0).inner_text()
    _no_sideways_scroll(phone)
    fold.locator("a:text('short')").click()
    phone.wait_for_url(re.compile(r"/leaderboards/runtime-sweep/short/\?workload="))

    # a withdrawn run leaves the board, the compare page and its own URL
    live.manage("shell", "-c", WITHDRAW.format(run=runs["b200"]))
    page.goto(live.url + "/leaderboards/runtime-sweep/short/")
    assert _ranked_versions(page) == ["b100", "b300"]
    assert page.goto(f"{live.url}/runs/{runs['b200']}/").status == 404
    assert page.goto(f"{live.url}/compare/?runs={runs['b100']},{runs['b200']}").status == 404
