"""Issue 32 item 4: a run page's charts and its case table come from the same numbers — one bar per case
and lane level, each the figure of that case's table row (the chart once pooled lane rows into the plain
case's bar: 0.0205 s in the chart, 0.0223 s in the table; then, selecting rows by the lane label, drew
no bar at all for a lane run). A real llama-server depth-lane run."""

import html
import re

import pytest

from benchpack.reporting.charts import format_value
from registry_site.catalogue.models import PublishedCase, PublishedRun
from tests.service.lane_runs import DEPTH_RUN, approve_lane_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def depth_run(tmp_path, submit, operator):
    return PublishedRun.objects.get(submission=approve_lane_run(DEPTH_RUN, tmp_path, submit, operator))


def _chart_values(description: str, unit: str) -> dict[str, str]:
    """The chart's own sentence per bar ("short @depth=512: 0.0213 s (min …, max …)") -> {bar: shown value}."""
    found = {}
    for part in description.split("; "):
        name, _, rest = part.rpartition(": ")
        found[name] = rest.split(" (")[0].removesuffix(f" {unit}")
    return found


def test_each_bar_is_its_table_rows_figure(client, depth_run):
    page = client.get(f"/runs/{depth_run.pk}/").content.decode()
    charts = {html.unescape(title): html.unescape(desc) for title, desc in
              re.findall(r'<title id="[^"]+-t">(.*?)</title>\s*<desc id="[^"]+-d">(.*?)</desc>', page, re.S)}
    decode = charts["Decode speed (1/TPOT) per case: median, min–max (higher is faster)"]
    ttft = charts["Time to first token per case: median, min–max (lower is faster)"]
    cases = list(PublishedCase.objects.filter(run=depth_run).order_by("case"))
    assert len(cases) == 5 and all(" @depth=" in c.case for c in cases)
    assert _chart_values(ttft, "s") == {c.case: format_value(c.ttft_s) for c in cases}
    assert _chart_values(decode, "tok/s") == {c.case: format_value(c.decode_rate) for c in cases}
    for c in cases:  # and the table shows those same figures
        assert f'<td class="num">{c.ttft_s:.4f}</td>' in page, c.case
