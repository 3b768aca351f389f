"""The static site: a prefill served from the prompt cache is shown as
cached, never as a rate; the server's own prefill rate beside it; a TTFT
chart; and the page fits a 1280 px window in a real browser."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from benchpack.registry.importer import RunSource, import_result_dirs
from benchpack.registry.schema import open_read_only
from benchpack.registry.site import write_site
from tests.data_paths import REAL_RESULTS
from tests.reporting.test_compare_decide import row
from tests.environment import needs, unavailable

CHROMIUM = Path("/usr/bin/chromium")


def write_run(path: Path, rows: list[dict]) -> Path:
    path.mkdir(parents=True)
    (path / "run.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture
def site(tmp_path):
    cached = write_run(tmp_path / "2026-12-01-llama-server-warm-cache-reused-every-prompt",
                       [row("short", cached=93, ttft=0.0126, server=85.0) for _ in range(3)])
    cold = write_run(tmp_path / "2026-12-01-llama-server-cold-prompts-qwen2.5-coder-32b-instruct-q4_k_m",
                     [row("short", cached=0, ttft=0.2, server=498.0) for _ in range(3)])
    runs = [cached, cold]
    for source in REAL_RESULTS.iterdir():
        runs.append(tmp_path / source.name)
        shutil.copytree(source, runs[-1])
    db = tmp_path / "registry.sqlite3"
    import_result_dirs(db, [RunSource(p) for p in runs])
    conn = open_read_only(db)
    try:
        write_site(conn, tmp_path / "site")
    finally:
        conn.close()
    return (tmp_path / "site" / "index.html").read_text()


def case_rows(index: str, label: str) -> list[str]:
    case_table = index[index.index("<th>pack · case</th>"):]
    return [line.split("</tr>")[0] for line in case_table.split("<tr>") if label in line]


def test_a_cached_prefill_is_shown_as_cached_beside_the_servers_rate(site):
    [warm] = case_rows(site, "warm-cache")
    assert ">cached</td>" in warm and "7460" not in warm and ">85.0</td>" in warm
    [cold] = case_rows(site, "cold-prompts")
    assert ">470.0</td>" in cold and ">498.0</td>" in cold


def test_it_draws_a_ttft_chart(site):
    assert "Median time to first token per case" in site
    assert site.count("<svg") >= 2


def test_the_page_fits_a_1280_pixel_window(site, tmp_path):
    if not CHROMIUM.exists():
        unavailable("Debian chromium is not installed (.ci/run installs it: apt-get install -y chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto((tmp_path / "site" / "index.html").as_uri())
            width = page.evaluate("document.documentElement.scrollWidth")
            widest = page.evaluate("Math.max(...[...document.querySelectorAll('table, svg')]"
                                   ".map(e => e.getBoundingClientRect().right))")
        finally:
            browser.close()
    assert width <= 1280 and widest <= 1280, (width, widest)
