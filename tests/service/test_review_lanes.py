"""The review page shows a submission's lanes: depth curves (tables and SVG charts) and per-level
concurrency aggregates with goodput, from real llama-server lane runs."""

from __future__ import annotations

import re
import shutil
import xml.etree.ElementTree as ET

import pytest

from submissions import states
from submissions.tasks import validate_submission
from tests.data_paths import LANES_RESULTS

NS = {"s": "http://www.w3.org/2000/svg"}


@pytest.fixture
def lanes_archive(tmp_path):
    from benchpack.bundles.archives import pack_archive
    from benchpack.bundles.create import create_bundle

    sources = []
    for source in sorted(LANES_RESULTS.iterdir()):
        copy = tmp_path / "results" / source.name
        shutil.copytree(source, copy)
        sources.append(copy)
    bundle = create_bundle(sources, tmp_path / "bundle", "self-reported")
    return pack_archive(bundle, tmp_path / "lanes.tar.gz")


def test_the_review_page_shows_depth_curves_and_concurrency_levels(client, submit, lanes_archive, operator):
    submission = submit(lanes_archive)
    assert validate_submission(str(submission.pk)) == states.QUARANTINED
    client.force_login(operator)
    page = client.get(f"/review/{submission.pk}/").content.decode()
    lanes = page[page.index('id="lanes"'):]
    assert "Depth lane" in lanes and "Concurrency and rate lanes" in lanes
    depth_rows = re.findall(r"<tr><td>short</td><td class=\"num\">(\d+)</td>", lanes)
    assert depth_rows == ["0", "512", "1024", "2048", "3072"]
    for level in ("1 streams", "2 streams", "4 streams", "8 streams"):
        assert f"<td>{level}</td>" in lanes
    assert "16/16" in lanes and "TTFT ≤ 2.0 s and TPOT ≤ 0.1 s" in lanes
    drawn = [ET.fromstring(svg) for svg in re.findall(r"<svg\b.*?</svg>", lanes, flags=re.S)]
    # each chart is drawn twice, for a desktop and for a phone (issue 32 item 7); the phone's is fitted
    charts = [c for c in drawn if "bp-fitted" not in c.get("class")]
    phone = [c for c in drawn if "bp-fitted" in c.get("class")]
    assert [c.find("s:title", NS).text for c in phone] == [c.find("s:title", NS).text for c in charts]
    assert {c.get("width") for c in phone} == {"360"} and {c.get("width") for c in charts} == {"640"}
    titles = [c.find("s:title", NS).text for c in charts]
    assert titles == ["Output rate against streams in flight",  # the concurrency run's section comes first
                      "short: prefill against context depth", "short: decode (1/TPOT) against context depth"]
    assert len(charts[0].findall(".//s:circle", NS)) == 4  # one point per concurrency level
    assert len(charts[1].findall(".//s:circle", NS)) == 5  # one point per depth
    # hardware and metadata in words, as on the public run page: no Python reprs, no lanes blob
    text = re.sub(r"<[^>]+>", " ", page[:page.index('id="lanes"')])
    for raw in ("None", "True", "False", "{'", "[{", "lanes.levels"):
        assert raw not in text, raw
    assert "runtime.name" in page and "<dt>RAM</dt>" in page
    assert "not measured (no energy source on this machine" in lanes
