"""`/runs/<id>/rows.jsonl` and `rows.csv`: the raw rows of a public run, and nothing of any other."""

import csv
import io
import json

import pytest

from registry_site.catalogue.pages.runs import _cell

pytestmark = pytest.mark.django_db


def body(response) -> str:
    return b"".join(response.streaming_content).decode()


def test_jsonl_gives_back_the_submitted_rows(client, publish):
    run = publish("2026-04-29-llama-server-runtime")
    response = client.get(f"/runs/{run.pk}/rows.jsonl")
    assert response["Content-Type"].startswith("application/x-ndjson")
    assert f'benchpack-run-{run.pk}.jsonl' in response["Content-Disposition"]
    rows = [json.loads(line) for line in body(response).splitlines()]
    assert rows == list(run.rows.order_by("pk").values_list("raw", flat=True)) and len(rows) == 9


def test_csv_has_one_column_per_dotted_field_and_one_line_per_row(client, publish):
    run = publish("2026-04-29-llama-server-runtime")
    response = client.get(f"/runs/{run.pk}/rows.csv")
    assert response["Content-Type"].startswith("text/csv")
    table = list(csv.DictReader(io.StringIO(body(response))))
    assert len(table) == 9
    first = run.rows.order_by("pk").first().raw
    assert table[0]["case"] == first["case"] and float(table[0]["timing.ttft_s"]) == first["timing"]["ttft_s"]
    assert table[0]["pack.id"] == "runtime-sweep" and table[0]["ok"] == "true"


def test_a_cell_a_spreadsheet_would_run_is_defused_but_numbers_stay_numbers():
    assert _cell("=HYPERLINK(\"x\")") == "'=HYPERLINK(\"x\")" and _cell("-1.5") == "-1.5" and _cell(None) == ""


def test_hidden_runs_have_no_downloads(client, hidden_runs):
    for run in (hidden_runs["withdrawn"], hidden_runs["unpublished"]):
        for suffix in ("rows.jsonl", "rows.csv"):
            assert client.get(f"/runs/{run.pk}/{suffix}").status_code == 404
