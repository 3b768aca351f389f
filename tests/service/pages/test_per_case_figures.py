"""A whole-pack board's rows carry their figures per base case (issue 32 item 4): a short and a long
prompt's TTFT pooled into one median is unlike work, so each row also says TTFT and decode case by case —
the very figures that system's row shows on each case's board, on the page and in the API."""

from __future__ import annotations

import json
import re

import pytest

from benchpack.measurement import stats
from registry_site.catalogue.templatetags.catalogue import sig

pytestmark = pytest.mark.django_db
BASE = "2026-04-29-llama-server-runtime"  # three base cases: short, medium, long


@pytest.fixture
def board(publish, variant, tmp_path):
    """b100 twice (two runs behind its rows), b200 once; b300 twice, once without its long case."""
    for name, version, speed in (("b100-a", "b100", 1.0), ("b100-b", "b100", 1.6), ("b200", "b200", 2.0),
                                 ("b300-a", "b300", 0.5)):
        publish(variant(BASE, f"llama-{name}", speed=speed, runtime=("llama.cpp", version)))
    partial = variant(BASE, "llama-b300-partial", speed=0.7, runtime=("llama.cpp", "b300"))
    path = tmp_path / "results" / partial / "run.jsonl"
    kept = [line for line in path.read_text().splitlines() if line.strip() and json.loads(line)["case"] != "long"]
    path.write_text("\n".join(kept) + "\n")
    publish(partial)


def _case_row(client, pack_id: str, figure: dict, system_key: str) -> dict:
    body = client.get(f"/api/v1/leaderboards/{pack_id}/{figure['case']}/",
                      {"workload": figure["workload_key"], "page_size": 500}).json()
    found = [r for r in body["results"] if r["system_key"] == system_key]
    assert len(found) == 1, (figure, [r["system_key"] for r in body["results"]])
    return found[0]


def test_each_api_case_figure_is_the_systems_row_on_that_case_board(client, board):
    body = client.get("/api/v1/leaderboards/runtime-sweep/").json()
    rows = body["results"]
    assert {r["runtime_version"] for r in rows} == {"b100", "b200", "b300"}
    for row in rows:
        assert [c["case"] for c in row["cases"]] == ["long", "medium", "short"], row["cases"]
        for figure in row["cases"]:
            case_row = _case_row(client, "runtime-sweep", figure, row["system_key"])
            assert case_row["cases"] is None  # a case board's row is one case already
            assert (figure["ttft_s"], figure["decode_rate"], figure["runs"]) == \
                   (case_row["ttft_s"], case_row["decode_rate"], case_row["run_count"])
            assert figure["ttft_s"] is not None and figure["decode_rate"] is not None
    by_version = {r["runtime_version"]: r for r in rows}
    # unlike work kept apart: a long prompt's first token comes later than a short one's
    ttft = {c["case"]: c["ttft_s"] for c in by_version["b200"]["cases"]}
    assert ttft["long"] > ttft["short"], ttft
    # the stated aggregate of those rows: one run's whole-pack TTFT is the median of its case figures
    assert by_version["b200"]["run_count"] == 1
    assert by_version["b200"]["ttft_s"] == pytest.approx(stats.median(ttft.values()))
    # two runs behind the row and behind each case row
    assert by_version["b100"]["run_count"] == 2 and {c["runs"] for c in by_version["b100"]["cases"]} == {2}
    # b300's run without the long case is on another whole-pack workload, yet counts on the short and medium
    # boards: the case figure says so with its own run count
    b300 = {c["case"]: c["runs"] for c in by_version["b300"]["cases"]}
    assert by_version["b300"]["run_count"] == 1 and b300 == {"long": 1, "medium": 2, "short": 2}


def _cells(html: str, runtime_version: str) -> list[str]:
    """The `<td>`s of the board row whose runtime is `runtime_version`."""
    body = html.split("<tbody>")[1].split("</tbody>")[0]
    rows = [r for r in re.findall(r"<tr[^>]*>(.*?)</tr>", body, flags=re.S)
            if f"<small>{runtime_version}</small>" in r]
    assert len(rows) == 1, rows
    return re.findall(r"<td[^>]*>(.*?)</td>", rows[0], flags=re.S)


def test_the_page_folds_the_same_figures_under_each_row_and_links_each_case_board(client, board):
    rows = client.get("/api/v1/leaderboards/runtime-sweep/").json()["results"]
    html = client.get("/leaderboards/runtime-sweep/").content.decode()
    assert "per case" in html.split("<tbody>")[0]  # the header says what the fold holds
    for row in rows:
        model_cell = _cells(html, row["runtime_version"])[2]
        items = re.findall(r"<li>(.*?)</li>", model_cell, flags=re.S)
        assert '<details class="per-case"><summary>per case</summary>' in model_cell
        assert len(items) == len(row["cases"]) == 3
        for item, figure in zip(items, row["cases"]):
            href = re.search(r'href="([^"]+)"', item).group(1).replace("&amp;", "&")
            assert href == f"/leaderboards/runtime-sweep/{figure['case']}/?workload={figure['workload_key']}"
            text = re.sub(r"<[^>]+>", "", item)
            runs = "" if figure["runs"] == row["run_count"] else f" ({figure['runs']} runs)"
            assert text == f"{figure['case']} {sig(figure['ttft_s'])} s · {sig(figure['decode_rate'])} tok/s{runs}"
            # the case board's page shows the same two numbers in its decode and TTFT columns
            cells = _cells(client.get(href).content.decode(), row["runtime_version"])
            assert [re.split(r"<br>", cells[i])[0] for i in (5, 6)] == \
                   [sig(figure["decode_rate"]), sig(figure["ttft_s"])]
            assert "per-case" not in cells[2]  # no fold on a case board


def test_a_one_case_pack_pools_nothing_unlike_so_its_page_has_no_fold(client, publish):
    run = publish()  # smoke-chat: one case
    [row] = client.get(f"/api/v1/leaderboards/{run.pack_id}/").json()["results"]
    [figure] = row["cases"]
    assert figure["runs"] == row["run_count"] == 1 and figure["ttft_s"] == row["ttft_s"]
    body = client.get(f"/leaderboards/{run.pack_id}/").content.decode().split("<tbody>")[1]
    assert run.model in body and "per-case" not in body


def test_a_pack_of_more_cases_than_the_cap_lists_none_per_row(client, board, monkeypatch):
    from registry_site.catalogue import leaderboard as lb

    monkeypatch.setattr(lb, "PER_CASE_MAX", 2)  # runtime-sweep has 3 base cases
    rows = client.get("/api/v1/leaderboards/runtime-sweep/").json()["results"]
    assert rows and all(r["cases"] is None for r in rows)
    body = client.get("/leaderboards/runtime-sweep/").content.decode().split("<tbody>")[1]
    assert "llama.cpp" in body and "per-case" not in body
