"""Issue 32 item 7, in a real browser (Debian's Chromium via Playwright): on a 390 px phone and a 1366 px
screen, every text of every chart the depth-curve page, the run page, the coding view (scatter) and the
timeline show lies inside its chart — the pages as the catalogue renders them, with the site's stylesheet,
and the depth-curve page with eight systems of long labels, the coding view and timeline with seven hardware
classes and long runtime versions.

No live service: the page's HTML comes from the test client and is loaded with `set_content`, so the
browser measures exactly what a visitor's would lay out (fonts, the phone's CSS, the scaled SVG). The
browser starts after the database work is done: Playwright's sync API runs an event loop in this thread,
and Django refuses database calls from one."""

import pytest

from benchpack.reporting.charts import line_chart
from registry_site.catalogue.models import PublishedRun
from registry_site.catalogue.pages.fitted_charts import at_both_widths
from tests.reporting.test_line_chart_fits import depth_series
from tests.service.live import ROOT
from tests.environment import unavailable
from tests.service.test_e2e_browser import CHROMIUM
from tests.service.lane_runs import DEPTH_RUN, approve_lane_run
from tests.service.pages.test_coding_page import systems  # noqa: F401 - three coding systems, a fixture
from tests.service.pages.test_timeline_page import series  # noqa: F401 - a runtime's eight runs, a fixture
from tests.service.pages.test_timeline_page import url_for as timeline_url

pytestmark = [pytest.mark.django_db, pytest.mark.slow]
WIDTHS = {"desktop": {"width": 1366, "height": 900}, "phone": {"width": 390, "height": 844}}
STYLESHEET = ROOT / "static" / "benchpack" / "site.css"

# Every drawn text (its own text node; a <title> tooltip is not drawn) of every chart on screen, whose box
# leaves its chart's box by more than a pixel; and the size the chart's text is seen at, in CSS px.
MEASURE = """() => {
  const charts = [...document.querySelectorAll('svg.bp-chart')].filter(svg => svg.getBoundingClientRect().width > 0);
  const outside = charts.flatMap(svg => {
    const box = svg.getBoundingClientRect();
    return [...svg.querySelectorAll('text')].map(t => [t.childNodes[0] ? t.childNodes[0].nodeValue : '',
                                                      t.getBoundingClientRect()])
      .filter(([, r]) => r.left < box.left - 1 || r.right > box.right + 1 || r.top < box.top - 1
                         || r.bottom > box.bottom + 1)
      .map(([text, r]) => `${text}: x ${Math.round(r.left - box.left)}..${Math.round(r.right - box.left)} of `
                          + `${Math.round(box.width)}, y ${Math.round(r.top - box.top)}..${Math.round(r.bottom - box.top)} `
                          + `of ${Math.round(box.height)}`);
  });
  const seen = charts.map(svg => parseFloat(getComputedStyle(svg.querySelector('text')).fontSize)
                                 * svg.getBoundingClientRect().width / svg.viewBox.baseVal.width);
  return {charts: charts.length, drawn: document.querySelectorAll('svg.bp-chart').length, outside, seen};
}"""


@pytest.fixture
def pages(tmp_path, submit, operator, client):
    """The depth-curve page and the run page (bar charts per case and lane level, lane curves) of a real
    llama-server depth-lane run."""
    run = PublishedRun.objects.get(submission=approve_lane_run(DEPTH_RUN, tmp_path, submit, operator))
    depth = client.get("/depth-curves/lanes-bench/").content.decode()
    return {"the depth-curve page": depth, "the run page": client.get(f"/runs/{run.pk}/").content.decode(),
            "eight long-labelled systems": _crowded(depth)}


def _crowded(page: str) -> str:
    """The same page with each chart replaced by one of eight systems with long labels and deep depths."""
    chart = at_both_widths(lambda width, css_class: line_chart(
        depth_series(8), width=width, css_class=css_class, unit="tok/s", y_label="decode",
        title="Decode rate (1/TPOT), coding-agent-load 1.0.0 · fix-prerelease-order", x_label="context depth (tokens)"))
    head, rest = page.split('<div class="chart">', 1)
    return head + f'<div class="chart">{chart}</div><div class="chart">{chart}</div>' + rest.split("</section>", 1)[1]


@pytest.fixture
def eleven_uploads(settings):
    """Three coding systems and eight timeline runs, all one submitter's: over the hourly upload limit."""
    settings.SUBMISSION_RATE_LIMIT_PER_HOUR = 20


@pytest.fixture
def xy_pages(eleven_uploads, client, systems, series):
    """The coding view's scatter and a timeline (charts of benchpack.reporting.xy_charts), as rendered, and each
    crowded: seven long hardware classes on the scatter, a timeline of weeks over long runtime versions."""
    from tests.reporting.test_xy_chart_fits import scatter, timeline

    coding = client.get("/leaderboards/coding/?pack=python-regression-fix").content.decode()
    over_time = client.get(timeline_url(series[-1])).content.decode()
    # the helpers give the phone's drawing the page's class (bp-fitted) themselves
    return {"the coding view": coding, "the timeline": over_time,
            "seven long hardware classes": _with_chart(coding, at_both_widths(lambda width, _: scatter(width, 7, 129.0))),
            "a timeline of weeks": _with_chart(over_time, at_both_widths(
                lambda width, _: timeline(width, 35 * 86400, 9, 3)))}


def _with_chart(page: str, chart: str) -> str:
    """The page with its one chart replaced by `chart` (both drawings)."""
    head, rest = page.split('<div class="chart">', 1)
    return head + f'<div class="chart">{chart}</div>' + rest.split("</div></div>", 1)[1]


def test_no_chart_text_is_cut_off(pages):
    _measure(pages)


def test_no_scatter_or_timeline_text_is_cut_off(xy_pages):
    _measure(xy_pages, least=1)


def _measure(pages: dict[str, str], least: int = 2) -> None:
    if not CHROMIUM.exists():
        unavailable("Debian chromium is not installed (.ci/run installs it: apt-get install -y chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox", "--disable-gpu"])
        for size, viewport in WIDTHS.items():
            page = browser.new_context(viewport=viewport).new_page()
            for name, html in pages.items():
                page.set_content(html)
                page.add_style_tag(content=STYLESHEET.read_text(encoding="utf-8"))
                found = page.evaluate(MEASURE)
                # one drawing of each chart shown, never both
                assert found["charts"] >= least and found["drawn"] == 2 * found["charts"], (size, name, found)
                assert not found["outside"], (size, name, found["outside"])
                assert all(10 <= px <= 16 for px in found["seen"]), (size, name, found["seen"])  # near the page's text
                overflow = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
                assert overflow <= 1, (size, name, overflow)
        browser.close()
