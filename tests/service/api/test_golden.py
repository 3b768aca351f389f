"""Each endpoint's response, normalised, equals its golden file (tests/service/api/golden/, see golden.py)."""

from __future__ import annotations

import pytest

from tests.service.api.endpoints import endpoint_requests, run_names
from tests.service.api.golden import assert_matches_golden, normalise

pytestmark = pytest.mark.django_db


def test_every_endpoint_matches_its_golden_file(client, catalogue):
    names = run_names(catalogue)
    for name, url, _ in endpoint_requests(catalogue):
        response = client.get(url)
        assert response.status_code == 200, (url, response.content[:300])
        assert_matches_golden(name, normalise(response.json(), names))


def test_the_leaderboard_csv_matches_its_golden_file(client, catalogue):
    run = catalogue["runs"]["runtime"]
    response = client.get(f"/api/v1/leaderboards/{run.pack_id}/?format=csv")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    assert 'filename="leaderboard-runtime-sweep.csv"' in response["Content-Disposition"]
    lines = response.content.decode().splitlines()
    assert_matches_golden("leaderboard_pack_csv_header", {"header": lines[0].split(","), "rows": len(lines) - 1})
