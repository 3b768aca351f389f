"""`/timelines/`: one workload on one model + hardware class over runtime versions, with evidence-based flags."""

import pytest

from registry_site.catalogue.models import PublishedCase

pytestmark = pytest.mark.django_db
BASE = "2026-04-29-llama-server-runtime"


@pytest.fixture
def series(publish, variant):
    """Five b100 runs around one speed, then three b200 runs at half the speed: a regression with evidence."""
    runs = [publish(variant(BASE, f"b100-{i}", speed=speed, runtime=("llama.cpp", "b100")))
            for i, speed in enumerate((1.0, 1.01, 0.99, 1.02, 0.98))]
    runs += [publish(variant(BASE, f"b200-{i}", speed=speed, runtime=("llama.cpp", "b200")))
             for i, speed in enumerate((0.5, 0.51, 0.49))]
    return runs


def url_for(run, metric="decode_rate"):
    case = PublishedCase.objects.get(run=run, case="short")
    return (f"/timelines/?workload={case.workload_key}&model={run.model}&hardware_class={run.hardware_class}"
            f"&runtime=llama.cpp&metric={metric}")


def test_the_step_after_enough_runs_is_flagged_at_its_first_run_with_its_reason(client, series):
    html = client.get(url_for(series[-1])).content.decode()
    assert "Flagged changes" in html
    step = series[5]
    assert f"run #{step.pk}</a>: regression" in html and "all below the lowest of the 5 runs before it" in html
    assert html.count("regression — ") == 1  # the step, not each of its runs
    assert "b100" in html and "b200" in html  # per-version summary
    assert "<svg" in html and "bp-flag-regression" in html


def test_too_few_runs_get_no_verdict(client, publish, variant):
    runs = [publish(variant(BASE, f"few-{i}", speed=s)) for i, s in enumerate((1.0, 0.5, 0.5, 0.5))]
    html = client.get(url_for(runs[-1])).content.decode()
    assert "No change flagged" in html and "more needed" in html


def test_missing_or_bad_parameters_name_the_parameter(client, series):
    good = url_for(series[0])
    assert client.get(good.replace("metric=decode_rate", "metric=speed")).status_code == 400
    response = client.get(good.replace("&model=", "&x="))
    assert response.status_code == 400 and "<code>model</code>" in response.content.decode()
    assert client.get("/timelines/").status_code == 200


def test_hidden_runs_are_not_points(client, series, hidden_runs, operator):
    from registry_site.catalogue import transitions

    assert transitions.unpublish(series[-1].pk, operator, "bad clock")
    html = client.get(url_for(series[0])).content.decode()
    assert f"/runs/{series[-1].pk}/" not in html
    assert "Flagged changes" not in html  # two runs of the step are left: not yet confirmed


def test_the_catalogue_scan_finds_the_same_step(series):
    from registry_site.catalogue import timelines as tl

    count, verdicts, flagged = tl.scan("decode_rate")
    regressions = {(f.verdict.run_id, f.runtime_version) for f in flagged if f.verdict.verdict == tl.REGRESSION}
    assert regressions == {(series[5].pk, "b200")}
    assert count == 3  # the short, medium and long cases are three series of one system
    # per series: five runs before any verdict, and the newest two wait for confirmation
    assert verdicts[tl.NO_VERDICT] == 3 * 7 and verdicts[tl.REGRESSION] == 3


def test_other_series_on_the_workload_are_linked(client, series, publish, variant):
    publish(variant(BASE, "other-ram", ram_mb=32768))
    html = client.get(url_for(series[0])).content.decode()
    assert "Other series on this workload" in html and "apple-m5-max-32gb" in html
    assert "8 runs" in html and "1 run<" in html


def test_a_long_series_shows_its_newest_runs_and_says_how_many(client, series, monkeypatch):
    from registry_site.catalogue.pages import timelines as page

    monkeypatch.setattr(page, "CHART_POINTS", 4)
    monkeypatch.setattr(page, "TABLE_ROWS", 3)
    html = client.get(url_for(series[-1])).content.decode()
    assert "8 runs in this series; the chart shows the newest 4 and the table the newest 3" in html
    assert f"#{series[-1].pk}</a>" in html and f"#{series[0].pk}</a>" not in html
    assert f"run #{series[5].pk}</a>: regression" in html  # judged over every run, shown or not


def test_the_chart_is_drawn_at_640_and_at_a_phones_width_and_every_text_fits_each(client, series):
    """Issue 32 item 7: the timeline is drawn twice, each laid out for the width it is shown at."""
    from benchpack.reporting.charts import PHONE_WIDTH
    from tests.reporting.test_line_chart_fits import assert_fits
    from tests.service.pages.test_coding_page import drawings

    svgs = drawings(client.get(url_for(series[-1])).content.decode())
    wide, phone = assert_fits(svgs["chart-wide"]), assert_fits(svgs["chart-phone"])
    assert (wide.get("width"), phone.get("width")) == ("640", str(PHONE_WIDTH))
    assert "bp-fitted" in phone.get("class") and "bp-fitted" not in wide.get("class")
    for svg in svgs.values():
        assert svg.count("bp-flag-regression") == 1 and svg.count('class="bp-point') == len(series)
