"""No endpoint issues a query per row: a page of one row and a page of all rows cost the same queries."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.service.api.endpoints import endpoint_requests

pytestmark = pytest.mark.django_db
PAGED = {"runs_list", "cases_list", "systems_list", "leaderboards_index", "leaderboard_pack", "leaderboard_case",
         "models_list", "hardware_classes_list", "runtimes_list"}


def _queries(client, url) -> int:
    from django.core.cache import cache

    cache.clear()
    with CaptureQueriesContext(connection) as captured:
        assert client.get(url).status_code == 200, url
    return len(captured)


def test_query_count_does_not_grow_with_the_page(client, catalogue):
    counts = {}
    for name, url, _ in endpoint_requests(catalogue):
        if name not in PAGED:
            continue
        joiner = "&" if "?" in url else "?"
        one, many = (_queries(client, f"{url}{joiner}page_size={size}") for size in (1, 500))
        counts[name] = (one, many)
        assert one == many, f"{name}: {one} queries for a page of 1, {many} for a page of 500"
    print(counts)


def test_run_detail_queries_do_not_grow_with_its_cases(client, catalogue):
    small, large = catalogue["runs"]["smoke"], catalogue["runs"]["runtime"]
    assert large.cases.count() > small.cases.count()
    assert _queries(client, f"/api/v1/runs/{small.pk}/") == _queries(client, f"/api/v1/runs/{large.pk}/")
