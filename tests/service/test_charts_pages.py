"""The run and review pages draw their per-case numbers as inline SVG charts."""

import re
import xml.etree.ElementTree as ET

import pytest
from django.template import Context, Template

from registry_site.catalogue.models import PublishedRun
from submissions import states
from tests.service.vouch import approve
from submissions.tasks import validate_submission

NS = {"s": "http://www.w3.org/2000/svg"}


def charts_in(html: str) -> list[ET.Element]:
    """The desktop drawing of each chart; each is drawn again for a phone (class bp-fitted, issue 32 item 7),
    with the same bars."""
    drawn = [ET.fromstring(svg) for svg in re.findall(r"<svg\b.*?</svg>", html, flags=re.S)]
    wide = [c for c in drawn if "bp-fitted" not in c.get("class")]
    phone = [c for c in drawn if "bp-fitted" in c.get("class")]
    assert [tooltips(c) for c in phone] == [tooltips(c) for c in wide]
    return wide


def tooltips(chart: ET.Element) -> list[str]:
    return [g.find("s:title", NS).text for g in chart.findall(".//s:g[@class='bp-row']", NS)]


def quarantine(submit, archive):
    submission = submit(archive)
    assert validate_submission(str(submission.pk)) == states.QUARANTINED
    return submission


@pytest.fixture
def published(submit, bundle_archive, operator, tmp_path):
    from tests.service.variants import make_variant

    # The seed's rows predate tpot_s; the variant has it, so decode (1/tpot_s) has values to chart.
    make_variant(tmp_path / "results", "2026-04-29-llama-server-runtime", "2026-04-29-llama-server-runtime")
    submission = quarantine(submit, bundle_archive("2026-04-29-llama-server-runtime"))
    assert approve(submission.pk, operator)
    return PublishedRun.objects.get(submission=submission)


def test_it_charts_decode_speed_and_ttft_per_case_on_the_run_page(client, published):
    page = client.get(f"/runs/{published.pk}/").content.decode()
    decode, ttft = charts_in(page)
    assert "Decode speed" in decode.find("s:title", NS).text and "first token" in ttft.find("s:title", NS).text
    short = published.cases.get(case="short")
    assert short.decode_rate is not None
    for chart, median in ((decode, short.decode_rate), (ttft, short.ttft_s)):
        cases = [tip.split(":")[0] for tip in tooltips(chart)]
        assert cases == list(published.cases.values_list("case", flat=True))
        assert f"short: {median!r}" in tooltips(chart)[0]  # the same median as the published table
        assert len(chart.findall(".//s:path[@class='bp-whisker']", NS)) == 3  # three repetitions per case
    assert page.index("<svg") < page.index("<th>case</th>")


def test_it_charts_a_submission_next_to_approved_results_with_its_fingerprint(client, published, submit, bundle_archive, operator):
    second = quarantine(submit, bundle_archive("2026-04-29-llama-server-runtime", provenance="operator-curated"))
    client.force_login(operator)
    page = client.get(f"/review/{second.pk}/").content.decode()
    decode = next(c for c in charts_in(page) if "Decode speed" in c.find("s:title", NS).text)
    groups = [g.text for g in decode.findall("s:text[@class='bp-group']", NS)]
    assert groups == ["short", "medium", "long"]
    tips = tooltips(decode)
    mine = [t for t in tips if "this submission" in t]
    theirs = [t for t in tips if "approved, same fingerprint" in t]
    assert len(mine) == 3 and len(theirs) == 3
    assert f"#{published.pk} {published.model}: {published.cases.get(case='short').decode_rate!r}" in theirs[0]


def test_it_leaves_the_review_chart_without_approved_bars_when_nothing_matches(client, submit, bundle_archive, operator):
    submission = quarantine(submit, bundle_archive("2026-04-29-llama-server-smoke"))
    client.force_login(operator)
    charts = charts_in(client.get(f"/review/{submission.pk}/").content.decode())
    assert charts and all("approved, same fingerprint" not in t for c in charts for t in tooltips(c))


def test_it_escapes_hostile_case_names_in_the_template_tag():
    rows = [{"case": "<script>alert(1)</script>", "ok": True, "timing": {"decode_tps": 5.0}}]
    html = Template("{% load charts %}{% case_spread_chart rows 'timing.decode_tps' title='t' unit='tok/s' %}").render(
        Context({"rows": rows})
    )
    assert "<script" not in html
    (chart,) = charts_in(html)
    assert tooltips(chart) == ["<script>alert(1)</script>: 5.0 tok/s\nmedian of 1 ok rows"]


def test_it_draws_nothing_for_a_run_without_rows():
    html = Template("{% load charts %}{% case_spread_chart rows 'timing.decode_tps' title='t' %}").render(Context({"rows": []}))
    assert html == ""
